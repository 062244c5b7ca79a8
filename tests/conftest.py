"""Shared test settings: Airflow gets a throw-away home so tests never touch ~/airflow."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

from airflow_provider_kafkaspark.local.kafka import LocalKafkaCluster

os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="kafkaspark-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    """One real Kafka broker (KRaft) for the whole session. Missing Java or jars make it
    fail, never skip: a test that did not run must not look like one that passed."""
    cluster = LocalKafkaCluster(tmp_path_factory.mktemp("kafka"), brokers=1)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
