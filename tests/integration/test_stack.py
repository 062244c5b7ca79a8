"""The local stack is made of real parts that behave like Kafka and Spark do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from airflow_provider_kafkaspark.errors import BrokerStartError
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import (
    create_topic,
    produce_numbered,
    read_all_values,
    watermarks,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

RECORDS = 10_000


def test_spark_reads_every_record_and_broker_restart_keeps_them(
    kafka_cluster: LocalKafkaCluster, spark: SparkSession, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = "stack_proof"
    create_topic(bootstrap, topic, partitions=3)
    acked = produce_numbered(bootstrap, topic, RECORDS)
    assert sum(acked.values()) == RECORDS
    assert set(acked) == {0, 1, 2}, "every partition should get records"

    checkpoint = tmp_path / "checkpoint"
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    query = (
        stream.selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName("stack_proof_out")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    assert query.exception() is None

    rows = spark.sql(
        "SELECT partition, COUNT(*) AS n, COUNT(DISTINCT offset) AS d, MIN(offset) AS lo, "
        "MAX(offset) AS hi FROM stack_proof_out GROUP BY partition"
    ).collect()
    by_partition = {r["partition"]: r for r in rows}
    assert set(by_partition) == {0, 1, 2}
    for p, n in acked.items():
        row = by_partition[p]
        assert (row["n"], row["d"], row["lo"], row["hi"]) == (n, n, 0, n - 1)
    values = {r["value"] for r in spark.sql("SELECT value FROM stack_proof_out").collect()}
    assert values == {str(i) for i in range(RECORDS)}

    # The checkpoint's last planned batch ends exactly at each partition's end offset.
    batches = [f for f in (checkpoint / "offsets").iterdir() if f.name.isdigit()]
    last_batch = max(batches, key=lambda f: int(f.name))
    source_offsets = json.loads(last_batch.read_text().splitlines()[2])
    assert source_offsets == {topic: {str(p): n for p, n in acked.items()}}
    assert (checkpoint / "commits" / last_batch.name).is_file()

    before = watermarks(bootstrap, topic, 3)
    kafka_cluster.stop()
    assert not kafka_cluster.is_running(1)
    kafka_cluster.start()
    assert watermarks(bootstrap, topic, 3) == before
    after_restart = read_all_values(bootstrap, topic, 3)
    assert len(after_restart) == RECORDS
    assert set(after_restart) == {str(i) for i in range(RECORDS)}


@pytest.mark.extended(
    covered_by="tests/reliability broker_loss (a broker of a 3-broker cluster killed and "
    "brought back under a job: every value once)"
)
def test_three_node_cluster_keeps_data_through_a_broker_kill(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from confluent_kafka.admin import AdminClient

    with LocalKafkaCluster(tmp_path_factory.mktemp("kafka3"), brokers=3) as cluster:
        bootstrap = cluster.bootstrap_servers
        assert len(bootstrap.split(",")) == 3
        topic = "replicated"
        create_topic(bootstrap, topic, 3, replication=3, **{"min.insync.replicas": "2"})
        produce_numbered(bootstrap, topic, 1000, acks="all")

        cluster.kill_broker(2)
        assert not cluster.is_running(2)
        # Two of three replicas are enough for acks=all with min.insync.replicas=2.
        produce_numbered(bootstrap, topic, 1000, start=1000, acks="all")

        cluster.start_broker(2)
        assert cluster.is_running(2)
        admin = AdminClient({"bootstrap.servers": cluster.node(2).address})
        metadata = admin.list_topics(timeout=10)
        assert set(metadata.brokers) == {1, 2, 3}

        values = read_all_values(bootstrap, topic, 3)
        assert sorted(values, key=int) == [str(i) for i in range(2000)]


def test_a_start_that_fails_leaves_no_broker_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = LocalKafkaCluster(tmp_path / "failing", brokers=1)
    started: list[int] = []

    def never_ready(node_ids: list[int], timeout: float = 90.0) -> None:
        pid = cluster.node(1).pid
        assert pid is not None and Path(f"/proc/{pid}").exists()
        started.append(pid)
        raise BrokerStartError("did not answer (test)")

    monkeypatch.setattr(cluster, "wait_ready", never_ready)
    with pytest.raises(BrokerStartError):
        cluster.start()
    assert len(started) == 1 and not Path(f"/proc/{started[0]}").exists()
    assert cluster.node(1).pid is None
