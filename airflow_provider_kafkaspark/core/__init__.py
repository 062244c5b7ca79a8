"""The pure core: no Airflow and no Spark imports. Operators, the Spark runtime and the CLI
all call into it. confluent_kafka is imported only inside the functions of the Kafka modules
(`kafka_client`, `kafka_admin`, `bootstrap_probe`), never at import time.
"""
