"""The pure core: no Airflow and no Spark imports. Operators, the Spark runtime and the CLI
all call into it. confluent_kafka is imported only inside the functions of `core/kafka/`,
never at import time.
"""
