"""The pure core: no Airflow and no Spark imports. Operators, the Spark runtime and the CLI
all call into it. confluent_kafka is only imported inside `core.kafka_admin`'s functions.
"""
