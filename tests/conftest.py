"""Shared test settings: Airflow gets a throw-away home so tests never touch ~/airflow."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.spark.fast_jvm import FAST_JVM_ENV
from kafkaspark_devstack.jars import use_default_jars_dir
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import LocalS3Server

# One bucket on the session's S3 server; tests keep apart by key prefix (their tmp_path name).
S3_BUCKET = "kafkaspark-tests"

os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="kafkaspark-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
# Spark drivers and Kafka brokers start in about half the time (class archives built by
# `make setup`, C1-only compilation); every process the tests start inherits it. Set it to 0
# to run the suite on the JVM's defaults.
os.environ.setdefault(FAST_JVM_ENV, "1")
# The jars drivers read from their explicit setting: the dev stack's cache (.cache/jars)
# unless the caller named another folder; every process the tests start inherits it.
use_default_jars_dir()


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


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalS3Server]:
    """One real S3-compatible server (SeaweedFS) for the session, with the bucket
    `S3_BUCKET`; started only by the tests that ask for it."""
    with LocalS3Server(tmp_path_factory.mktemp("s3")) as server:
        server.create_bucket(S3_BUCKET)
        yield server


def s3_env(server: LocalS3Server) -> dict[str, str]:
    """The standard AWS variables, as a CLI user or a driver has them."""
    return server.aws_environment()


@pytest.fixture
def s3_url(
    s3_server: LocalS3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """`s3://<bucket>/<this test's folder name>`, with the AWS variables set for it."""
    for key, value in s3_env(s3_server).items():
        monkeypatch.setenv(key, value)
    yield f"s3://{S3_BUCKET}/{tmp_path.name}"
