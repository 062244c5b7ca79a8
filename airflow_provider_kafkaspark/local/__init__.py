"""The local stack made of real parts: Kafka brokers in KRaft mode and Spark in local mode.

Nothing here is imported by DAG parsing; pyspark and confluent_kafka load lazily.
"""

from airflow_provider_kafkaspark.local.jars import (
    default_jars_dir,
    find_java,
    resolve_jars,
    spark_connector_jars,
)
from airflow_provider_kafkaspark.local.kafka import LocalKafkaCluster

__all__ = [
    "LocalKafkaCluster",
    "default_jars_dir",
    "find_java",
    "resolve_jars",
    "spark_connector_jars",
]
