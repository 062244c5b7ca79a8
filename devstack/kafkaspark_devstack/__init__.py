"""The local stack made of real parts, on top of airflow_provider_kafkaspark (which never
imports it): Kafka brokers in KRaft mode, an S3 store, YARN, PostgreSQL and Airflow's
services, the network-namespace test bed, the jar cache and JVM class archives, the demo.

Nothing here is imported by DAG parsing; pyspark and confluent_kafka load lazily.
"""
