"""Session-wide real parts: one Kafka broker (KRaft) and one local Spark session.

Missing Java or jars make these fixtures fail, never skip: an integration test that did
not run must not look like one that passed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from airflow_provider_kafkaspark.local.kafka import LocalKafkaCluster
from airflow_provider_kafkaspark.local.spark import local_spark_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    cluster = LocalKafkaCluster(tmp_path_factory.mktemp("kafka"), brokers=1)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_spark_session("kafkaspark-tests")
    try:
        yield session
    finally:
        session.stop()
