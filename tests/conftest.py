"""Shared test settings: Airflow gets a throw-away home so tests never touch ~/airflow."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

from airflow_provider_kafkaspark.local.jvm_archive import FAST_JVM_ENV
from airflow_provider_kafkaspark.local.kafka import LocalKafkaCluster

os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="kafkaspark-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
# Spark drivers and Kafka brokers start in about half the time (class archives built by
# `make setup`, C1-only compilation); every process the tests start inherits it. Set it to 0
# to run the suite on the JVM's defaults.
os.environ.setdefault(FAST_JVM_ENV, "1")


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
