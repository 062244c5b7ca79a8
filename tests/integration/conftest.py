"""Session-wide real parts: one local Spark session and checkpoints it wrote (the Kafka
broker fixture is in tests/conftest.py, shared with tests/e2e).

Missing Java or jars make these fixtures fail, never skip: an integration test that did
not run must not look like one that passed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from airflow_provider_kafkaspark.spark.local_session import local_spark_session
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.integration.spark_checkpoints import MadeCheckpoint, run_stateless, run_windowed_count

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_spark_session("kafkaspark-tests")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def made_checkpoints(
    kafka_cluster: LocalKafkaCluster, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, MadeCheckpoint]:
    """Two real checkpoints, made once per session; tests copy them before touching them.

    `stateless`: 3 partitions, 3,000 records, 1,000 per trigger (several batches).
    `stateful`: a windowed count with state files.
    """
    base = tmp_path_factory.mktemp("made-checkpoints")
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, "core_stateless", 3)
    produce_numbered(bootstrap, "core_stateless", 3000)
    run_stateless(
        spark,
        bootstrap,
        "core_stateless",
        base / "stateless",
        "made_stateless",
        max_per_trigger=1000,
    )
    create_topic(bootstrap, "core_stateful", 2)
    produce_numbered(bootstrap, "core_stateful", 2000)
    run_windowed_count(spark, bootstrap, "core_stateful", base / "stateful", "made_stateful")
    return {
        "stateless": MadeCheckpoint(base / "stateless", "core_stateless", "made_stateless", 3000),
        "stateful": MadeCheckpoint(base / "stateful", "core_stateful", "made_stateful", 2000),
    }
