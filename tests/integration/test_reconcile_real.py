"""Reconciliation of a real checkpoint against a real broker whose topics change."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

from airflow_provider_kafkaspark.core.health.observe import health_observation, kafka_view
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.kafka.reconcile import (
    FindingKind,
    Severity,
    build_reconcile_plan,
)
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.integration.spark_checkpoints import run_stateless

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.5)


def test_plan_reports_new_partitions_lost_records_and_deleted_topics(
    kafka_cluster: LocalKafkaCluster, spark: SparkSession, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    main, other = "reconcile_main", "reconcile_other"
    create_topic(bootstrap, main, 2)
    create_topic(bootstrap, other, 1)
    produce_numbered(bootstrap, main, 400)
    produce_numbered(bootstrap, other, 50)
    checkpoint = tmp_path / "cp"
    spark_topics = f"{main},{other}"
    run_stateless(spark, bootstrap, spark_topics, checkpoint, "reconcile_first")
    position = CheckpointReader(str(checkpoint)).position()
    committed = position.committed_offsets
    assert set(committed) == {main, other}

    kafka = KafkaFacade({"bootstrap.servers": bootstrap}, timeout_s=10)
    clean = build_reconcile_plan(committed, kafka_view(kafka, committed))
    assert clean.findings == () and clean.total_lag_records == 0

    # While the job is "stopped": more data, a new partition, retention eats records,
    # and a topic goes away.
    produce_numbered(bootstrap, main, 300, start=400)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(main, 3)])[main].result()
    wait_for(lambda: kafka.topic_partitions([main]).get(main) == 3)
    produce_numbered(bootstrap, main, 30, start=700)  # some of these land in partition 2
    lost_partition = 0
    lose_to = committed[main][lost_partition] + 25
    futures = admin.delete_records([KafkaTopicPartition(main, lost_partition, lose_to)])
    for future in futures.values():
        future.result()
    admin.delete_topics([other])[other].result()
    wait_for(lambda: other not in kafka.topic_partitions([other]))

    view = kafka_view(kafka, committed, subscribed=[main])
    plan = build_reconcile_plan(committed, view)
    kinds = {(f.kind, f.topic, f.partition): f for f in plan.findings}

    new = kinds[(FindingKind.NEW_PARTITION, main, 2)]
    assert new.severity is Severity.WARNING
    lost = kinds[(FindingKind.OFFSET_BELOW_EARLIEST, main, lost_partition)]
    assert lost.severity is Severity.CRITICAL and lost.figures["records_lost"] == 25
    assert plan.records_lost_total == 25
    gone = kinds[(FindingKind.TOPIC_MISSING, other, None)]
    assert gone.severity is Severity.CRITICAL
    assert plan.blocking()
    ends = {p: w.high for p, w in view.partitions[main].items()}
    expected_lag = sum(ends[p] - committed[main][p] for p in (0, 1) if p != lost_partition)
    expected_lag += ends[lost_partition] - lose_to  # what Kafka still has
    expected_lag += ends[2]  # the new partition, read from earliest
    assert plan.total_lag_records == expected_lag
    assert plan.max_lag_seconds is not None and plan.max_lag_seconds >= 0

    observation = health_observation(position, kafka)
    assert observation.latest_committed == position.latest_committed
    assert observation.end_offsets[main] == ends
