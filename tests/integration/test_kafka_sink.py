"""The exactly-once Kafka sink against the real broker and real Spark.

Readers here stop at partition EOF, not at the high watermark: on a transactional topic the
last offset of a partition is a commit/abort marker that no consumer ever returns, so a
reader waiting for a message at `high watermark - 1` (kafka_util.read_all_values) stalls.

The crash tests run the streaming job in a child process with its own session (this file
run as a script), because the crash hook SIGKILLs the driver's whole process group.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.spark.sink import task as sink_task
from airflow_provider_kafkaspark.spark.sink.consumer_warning import (
    CONSUMER_LOGGER,
    warns_per_record,
)
from airflow_provider_kafkaspark.spark.sink.driver import (
    ExactlyOnceKafkaSink,
    TaskResult,
    close_cached_clients,
    write_task,
)
from airflow_provider_kafkaspark.spark.sink.fault_points import CRASH_AT_ENV, CRASH_MARKER_ENV
from tests.integration.kafka_util import (
    create_topic,
    produce_numbered,
    read_all_values,
    renumbered_topic,
    watermarks,
)
from tests.sink_cache import forget_marker

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kafkaspark_devstack.kafka import LocalKafkaCluster

ROOT = Path(__file__).resolve().parents[2]


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def read_values(
    bootstrap: str, topic: str, partitions: int, *, isolation: str = "read_committed"
) -> list[str]:
    return read_all_values(bootstrap, topic, partitions, isolation=isolation)


def marker_offset(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        offset = consumer.committed([TopicPartition(topic, 0)], timeout=30)[0].offset
        assert offset is not None
        return int(offset)
    finally:
        consumer.close()


def new_sink(bootstrap: str, topic: str, **kwargs: Any) -> ExactlyOnceKafkaSink:
    return ExactlyOnceKafkaSink(
        producer_config={"bootstrap.servers": bootstrap, "linger.ms": 5},
        topic=topic,
        sink_id=kwargs.pop("sink_id", unique("sink")),
        query_id=kwargs.pop("query_id", "q"),
        **kwargs,
    )


def values_frame(spark: SparkSession, start: int, count: int, partitions: int) -> DataFrame:
    """A DataFrame whose rows land in the same partition every time it is evaluated."""
    rows = [(str(i), str(i)) for i in range(start, start + count)]
    return spark.createDataFrame(rows, "key string, value string").repartition(partitions, "key")


def kafka_to_sink_query(
    spark: SparkSession,
    bootstrap: str,
    in_topic: str,
    checkpoint: Path,
    write: Callable[[DataFrame, int], None],
    max_per_trigger: int,
) -> None:
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", in_topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(max_per_trigger))
        .load()
        .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()


# -- 1. a streaming query writes every input record once -------------------------------


def test_streaming_query_writes_each_record_once(
    kafka_cluster: LocalKafkaCluster, spark: SparkSession, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    in_topic, out_topic = unique("sink-in"), unique("sink-out")
    create_topic(bootstrap, in_topic, 3)
    create_topic(bootstrap, out_topic, 3)
    produce_numbered(bootstrap, in_topic, 1500)
    sink = new_sink(bootstrap, out_topic)

    kafka_to_sink_query(spark, bootstrap, in_topic, tmp_path / "ckpt", sink, max_per_trigger=500)

    values = read_values(bootstrap, out_topic, 3)
    assert sorted(values, key=int) == [str(i) for i in range(1500)]
    reports = sink.reports
    assert [r.batch_id for r in reports] == list(range(len(reports)))
    assert len(reports) >= 3
    assert sum(r.rows_written for r in reports) == 1500
    assert all(r.tasks_skipped == 0 for r in reports)
    # Each task's marker says the last batch in which it wrote.
    last_written = {r.batch_id for r in reports if r.tasks_written}
    assert marker_offset(bootstrap, sink.marker_group(0), out_topic) == max(last_written) + 1
    # Keys carried through: the producer's partitioner spread them over the 3 partitions.
    spread = {p: hi for p, (_, hi) in watermarks(bootstrap, out_topic, 3).items()}
    assert all(hi > 0 for hi in spread.values()), spread
    # Spark 3.5's per-record warning of Python tasks reading Kafka is silenced, and only there.
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    level = str(jvm.org.apache.logging.log4j.LogManager.getLogger(CONSUMER_LOGGER).getLevel())
    assert (level == "ERROR") == warns_per_record(spark.version), (spark.version, level)


# -- 2. a replayed batch is skipped ----------------------------------------------------


def test_replayed_batch_is_skipped_and_a_new_batch_writes(
    kafka_cluster: LocalKafkaCluster, spark: SparkSession
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique("sink-replay")
    create_topic(bootstrap, topic, 3)
    sink = new_sink(bootstrap, topic)
    batch0 = values_frame(spark, 0, 60, 3)

    first = sink.write_batch(batch0, 0)
    assert (first.tasks, first.tasks_written, first.rows_written) == (3, 3, 60)

    replay = sink.write_batch(batch0, 0)
    assert (replay.tasks_written, replay.tasks_skipped, replay.rows_written) == (0, 3, 0)
    assert Counter(read_values(bootstrap, topic, 3)) == Counter(str(i) for i in range(60))

    second = sink.write_batch(values_frame(spark, 60, 30, 3), 1)
    assert (second.tasks_written, second.rows_written) == (3, 30)
    # An older batch replayed after a newer one committed is skipped too.
    again = sink.write_batch(batch0, 0)
    assert again.tasks_skipped == 3 and again.rows_written == 0
    assert sorted(read_values(bootstrap, topic, 3), key=int) == [str(i) for i in range(90)]
    assert [r.batch_id for r in sink.reports] == [0, 0, 1, 0]
    assert sink.last_report == again

    # 3 rows in 4 slices: slice 0 is empty, opens no transaction and moves no marker.
    sparse = spark.sparkContext.parallelize([("90",), ("91",), ("92",)], 4).toDF(["value"])
    third = sink.write_batch(sparse, 2)
    assert (third.tasks, third.tasks_empty, third.tasks_written, third.rows_written) == (4, 1, 3, 3)
    assert marker_offset(bootstrap, sink.marker_group(0), topic) == 2  # still batch 1's
    assert marker_offset(bootstrap, sink.marker_group(3), topic) == 3


# -- 3. a zombie's open transaction is fenced and aborted ------------------------------


def test_zombie_transaction_is_fenced_and_aborted(
    kafka_cluster: LocalKafkaCluster, spark: SparkSession
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique("sink-zombie")
    create_topic(bootstrap, topic, 3)
    sink = new_sink(bootstrap, topic)

    zombie = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": sink.transactional_id(0)}
    )
    zombie.init_transactions(30)
    zombie.begin_transaction()
    for i in range(20):
        zombie.produce(topic, value=f"zombie-{i}".encode(), partition=i % 3)
    assert zombie.flush(30) == 0
    # The zombie's records are in the log: read_uncommitted sees them, read_committed stops
    # before them (the open transaction holds the last stable offset back).
    assert len(read_values(bootstrap, topic, 3, isolation="read_uncommitted")) == 20
    assert read_values(bootstrap, topic, 3) == []

    report = sink.write_batch(values_frame(spark, 0, 40, 1), 0)
    assert (report.tasks, report.tasks_written, report.rows_written) == (1, 1, 40)

    committed = read_values(bootstrap, topic, 3)
    assert sorted(committed, key=int) == [str(i) for i in range(40)]
    uncommitted = read_values(bootstrap, topic, 3, isolation="read_uncommitted")
    assert sum(v.startswith("zombie-") for v in uncommitted) == 20
    with pytest.raises(KafkaException) as fenced:
        zombie.commit_transaction(30)
    assert fenced.value.args[0].fatal()


# -- 4. bad input is refused before anything is produced ------------------------------


def test_frame_without_value_is_refused_and_nothing_is_produced(
    kafka_cluster: LocalKafkaCluster, spark: SparkSession
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique("sink-bad")
    create_topic(bootstrap, topic, 1)
    sink = new_sink(bootstrap, topic)
    no_value = spark.createDataFrame([("a", "1")], "key string, payload string")
    with pytest.raises(InvalidInputError, match="`value`") as info:
        sink(no_value, 0)
    assert "payload" in str(info.value)
    int_value = spark.createDataFrame([(1,)], "value int")
    with pytest.raises(InvalidInputError, match="column `value` is int"):
        sink(int_value, 0)
    assert watermarks(bootstrap, topic, 1) == {0: (0, 0)}
    assert marker_offset(bootstrap, sink.marker_group(0), topic) < 0
    assert sink.reports == []


# -- 5. producers kept between batches ----------------------------------------------------
#
# The direct tests run the executor side (write_task) in this process, as one Python worker
# would: which worker Spark picks for a task is not up to a test, but here it is always the
# same one, so reuse and its recovery happen every time.


@pytest.fixture
def own_cache() -> Iterator[None]:
    close_cached_clients()
    yield
    close_cached_clients()


def direct_task(sink: ExactlyOnceKafkaSink, batch: int, values: list[str]) -> TaskResult:
    (result,) = write_task(sink.task_config(["value"]), batch, 0, [(v,) for v in values])
    return TaskResult(**result)


def numbers(batch: int, count: int = 10) -> list[str]:
    return [str(batch * 100 + i) for i in range(count)]


def newer_producer(bootstrap: str, sink: ExactlyOnceKafkaSink) -> Producer:
    """Another producer with task 0's transactional.id: another worker, a restarted job."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": sink.transactional_id(0)}
    )
    producer.init_transactions(30)
    return producer


def test_a_worker_reuses_its_producer_across_batches(
    kafka_cluster: LocalKafkaCluster, own_cache: None
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique("sink-reuse")
    create_topic(bootstrap, topic, 3)
    sink = new_sink(bootstrap, topic)

    results = [direct_task(sink, b, numbers(b)) for b in range(4)]

    assert [r.producer for r in results] == ["created", "reused", "reused", "reused"]
    assert [(r.status, r.rows) for r in results] == [("written", 10)] * 4
    assert "init_transactions" in results[0].phases
    assert all("init_transactions" not in r.phases for r in results[1:])
    assert marker_offset(bootstrap, sink.marker_group(0), topic) == 4
    replay = direct_task(sink, 3, numbers(3))
    assert (replay.status, replay.producer) == ("skipped", "reused")
    values = read_values(bootstrap, topic, 3)
    assert sorted(values, key=int) == [v for b in range(4) for v in numbers(b)]


def test_a_cached_producer_fenced_by_a_newer_one_recovers_in_task(
    kafka_cluster: LocalKafkaCluster, own_cache: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="airflow_provider_kafkaspark.spark.sink")
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique("sink-fenced")
    create_topic(bootstrap, topic, 3)
    sink = new_sink(bootstrap, topic)
    assert direct_task(sink, 0, numbers(0)).producer == "created"

    # The newer producer fences the cached one and dies with a transaction open.
    zombie = newer_producer(bootstrap, sink)
    zombie.begin_transaction()
    for i in range(20):
        zombie.produce(topic, value=f"zombie-{i}".encode(), partition=i % 3)
    assert zombie.flush(30) == 0

    result = direct_task(sink, 1, numbers(1))

    assert (result.status, result.producer, result.rows) == ("written", "replaced", 10)
    values = read_values(bootstrap, topic, 3)
    assert sorted(values, key=int) == numbers(0) + numbers(1)
    uncommitted = read_values(bootstrap, topic, 3, isolation="read_uncommitted")
    assert sum(v.startswith("zombie-") for v in uncommitted) == 20  # in the log, aborted
    with pytest.raises(KafkaException) as fenced:
        zombie.commit_transaction(30)
    assert fenced.value.args[0].fatal()
    assert marker_offset(bootstrap, sink.marker_group(0), topic) == 2
    assert direct_task(sink, 2, numbers(2)).producer == "reused"
    # The expected fencing is no alarm: librdkafka's FATAL line comes through at INFO.
    fencing = [r for r in caplog.records if "fenced" in r.getMessage().lower()]
    assert all(r.levelno == logging.INFO for r in fencing), [
        (r.levelname, r.getMessage()) for r in fencing
    ]


def test_a_batch_committed_by_a_newer_producer_is_skipped_by_the_cached_one(
    kafka_cluster: LocalKafkaCluster, own_cache: None
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique("sink-usurped")
    create_topic(bootstrap, topic, 3)
    sink = new_sink(bootstrap, topic)
    direct_task(sink, 0, numbers(0))

    # Another worker writes task 0 of batch 1 with its own producer, marker included.
    other = newer_producer(bootstrap, sink)
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": sink.marker_group(0)})
    other.begin_transaction()
    for value in numbers(1):
        other.produce(topic, value=value.encode())
    other.send_offsets_to_transaction(
        [TopicPartition(topic, 0, 2)], group.consumer_group_metadata(), 30
    )
    other.commit_transaction(30)
    group.close()

    # The cached producer remembers marker 1 ("batch 1 not committed"), is refused the
    # transaction (fenced), and its replacement reads marker 2: skip.
    replay = direct_task(sink, 1, numbers(1))
    assert (replay.status, replay.producer, replay.rows) == ("skipped", "replaced", 0)
    after = direct_task(sink, 2, numbers(2))
    assert (after.status, after.producer, after.rows) == ("written", "reused", 10)
    values = read_values(bootstrap, topic, 3)
    assert sorted(values, key=int) == numbers(0) + numbers(1) + numbers(2)


def test_a_pending_marker_of_a_dead_newer_producer_does_not_stall_the_cached_one(
    kafka_cluster: LocalKafkaCluster, own_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newer producer died between sending the marker and committing: its pending
    offset commit holds up read_committed marker reads until something aborts it."""
    monkeypatch.setattr(sink_task, "REUSED_MARKER_TIMEOUT_S", 1.0)
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique("sink-pending")
    create_topic(bootstrap, topic, 3)
    sink = new_sink(bootstrap, topic)
    direct_task(sink, 0, numbers(0))
    forget_marker(sink)  # so that the cached clients read the marker

    dead = newer_producer(bootstrap, sink)
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": sink.marker_group(0)})
    dead.begin_transaction()
    dead.send_offsets_to_transaction(
        [TopicPartition(topic, 0, 2)], group.consumer_group_metadata(), 30
    )
    dead.produce(topic, value=b"dead-1")
    assert dead.flush(30) == 0
    group.close()

    started = time.monotonic()
    result = direct_task(sink, 1, numbers(1))
    # Well under the 60 s transaction timeout that would otherwise end the wait.
    assert time.monotonic() - started < 20
    assert (result.status, result.producer, result.rows) == ("written", "replaced", 10)
    values = read_values(bootstrap, topic, 3)
    assert sorted(values, key=int) == numbers(0) + numbers(1)
    assert marker_offset(bootstrap, sink.marker_group(0), topic) == 2


def test_spark_tasks_reuse_the_producers_their_workers_keep(
    kafka_cluster: LocalKafkaCluster, spark: SparkSession
) -> None:
    """Through Spark, in whatever Python worker each task lands: a worker creates a producer
    for a task the first time it runs it, reuses it while no other worker ran that task in
    between, and replaces it (fenced by the other worker's) otherwise."""
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique("sink-workers")
    create_topic(bootstrap, topic, 3)
    sink = new_sink(bootstrap, topic)
    batches = 6
    for b in range(batches):
        report = sink.write_batch(values_frame(spark, b * 30, 30, 3), b)
        assert (report.tasks, report.tasks_written, report.rows_written) == (3, 3, 30)

    holder: dict[int, int] = {}  # task -> the worker whose producer for it is current
    kept: set[tuple[int, int]] = set()  # (worker, task) pairs that hold a producer
    origins: Counter[str] = Counter()
    for results in sink.task_results:
        for r in results:
            if (r.worker_pid, r.task) not in kept:
                expected = "created"
            elif holder[r.task] == r.worker_pid:
                expected = "reused"
            else:
                expected = "replaced"
            assert r.producer == expected, (r, holder)
            kept.add((r.worker_pid, r.task))
            holder[r.task] = r.worker_pid
            origins[r.producer] += 1
    workers = len({pid for pid, _ in kept})
    assert origins["created"] == len(kept) <= 3 * workers < 3 * batches
    assert sum(origins.values()) == 3 * batches
    assert sorted(read_values(bootstrap, topic, 3), key=int) == [
        str(i) for i in range(30 * batches)
    ]


def result_stage_tasks(spark: SparkSession, group: str) -> int:
    """Tasks of the last stage Spark ran for the jobs of `group`: the stage that wrote."""
    tracker = spark.sparkContext.statusTracker()
    jobs = [tracker.getJobInfo(job) for job in tracker.getJobIdsForGroup(group)]
    stages = [stage for job in jobs if job is not None for stage in job.stageIds]
    info = tracker.getStageInfo(max(stages))
    assert info is not None
    return int(info.numTasks)


def test_slots_shared_by_fewer_tasks_are_the_slots_of_one_task_each(
    kafka_cluster: LocalKafkaCluster, spark: SparkSession
) -> None:
    """A batch of 6 slots written by as many Spark tasks as the session has cores (2), each
    slot in a transaction of its own, and by 6 tasks (max_tasks=0): the same slots, so either
    way a replay of what the other wrote is skipped and every row is written once."""
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique("sink-shared")
    create_topic(bootstrap, topic, 3)
    sink_id = unique("sink")
    shared = new_sink(bootstrap, topic, sink_id=sink_id)
    own = new_sink(bootstrap, topic, sink_id=sink_id, max_tasks=0)
    context = spark.sparkContext

    context.setJobGroup("shared-0", "coalesced write")
    first = shared.write_batch(values_frame(spark, 0, 60, 6), 0)
    assert result_stage_tasks(spark, "shared-0") == 2
    assert (first.tasks, first.tasks_written, first.rows_written) == (6, 6, 60)
    assert sorted(r.task for r in shared.task_results[-1]) == list(range(6))
    assert len({r.worker_pid for r in shared.task_results[-1]}) <= 2

    context.setJobGroup("own-0", "one task per slot")
    replay = own.write_batch(values_frame(spark, 0, 60, 6), 0)
    assert result_stage_tasks(spark, "own-0") == 6
    assert (replay.tasks_skipped, replay.rows_written) == (6, 0)

    second = own.write_batch(values_frame(spark, 60, 60, 6), 1)
    assert (second.tasks_written, second.rows_written) == (6, 60)
    again = shared.write_batch(values_frame(spark, 60, 60, 6), 1)
    assert (again.tasks_skipped, again.rows_written) == (6, 0)
    context.setJobGroup("none", "")

    assert sorted(read_values(bootstrap, topic, 3), key=int) == [str(i) for i in range(120)]
    for slot in range(6):
        assert marker_offset(bootstrap, shared.marker_group(slot), topic) == 2


# -- 6. rows as Arrow batches or as pickled Rows: the same records ------------------------


def read_records(bootstrap: str, topic: str, partitions: int) -> list[tuple[Any, ...]]:
    """(partition, key, value, headers) of every committed record, to partition EOF."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kafkaspark-tests-records",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    records: list[tuple[Any, ...]] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"read stalled; partitions at end: {at_end}"
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                at_end.add(int(msg.partition() or 0))
                continue
            records.append((msg.partition(), msg.key(), msg.value(), msg.headers()))
    finally:
        consumer.close()
    return records


def test_arrow_and_row_transfer_write_the_same_records(
    kafka_cluster: LocalKafkaCluster, spark: SparkSession
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    rows = [
        (
            None if i % 7 == 0 else f"v{i}".encode(),  # tombstones too
            f"k{i}",
            i % 3 if i % 4 else None,  # null: the partitioner chooses
            [("n", str(i).encode()), ("empty", b"")] if i % 2 else None,
        )
        for i in range(60)
    ]
    schema = (
        "value binary, key string, partition int, headers array<struct<key:string,value:binary>>"
    )
    frame = spark.createDataFrame(rows, schema).repartition(3, "key")
    per_task: dict[bool, list[tuple[int, int]]] = {}
    records: dict[bool, list[tuple[Any, ...]]] = {}
    for arrow in (True, False):
        topic = unique(f"sink-arrow-{str(arrow).lower()}")
        create_topic(bootstrap, topic, 3)
        sink = new_sink(bootstrap, topic, arrow=arrow)
        assert sink.arrow is arrow
        report = sink.write_batch(frame, 0)
        assert (report.tasks, report.rows_written) == (3, 60)
        per_task[arrow] = sorted((r.task, r.rows) for r in sink.task_results[0])
        records[arrow] = sorted(read_records(bootstrap, topic, 3), key=lambda r: r[1])
    # The same rows in the same tasks, whichever way they travel, and the same records.
    assert per_task[True] == per_task[False]
    assert records[True] == records[False]
    expected = sorted(
        (p, f"k{i}".encode(), v, h)
        for i, (v, _, p, h) in enumerate(rows)
        if p is not None  # where the partitioner chose, the partition is not compared
    )
    got = sorted(r for r in records[True] if int(r[1][1:]) % 4)
    assert got == expected


# -- 7. crashes: the job dies like a machine, restarts, and the output is exact ------------


def run_crash_job(
    args: list[str], env: dict[str, str], log: Path
) -> tuple[int, list[dict[str, Any]]]:
    """This file as a script in its own session; returns (exit code, batch reports)."""
    with log.open("ab") as out:
        proc = subprocess.run(
            [sys.executable, "-m", "tests.integration.test_kafka_sink", *args],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=out,
            timeout=400,
            start_new_session=True,
            check=False,
        )
    reports = [
        json.loads(line.split(" ", 1)[1])
        for line in proc.stdout.decode().splitlines()
        if line.startswith("REPORT ")
    ]
    return proc.returncode, reports


@pytest.mark.parametrize(
    "point",
    [
        "after_sink_commit",
        "during_sink_write",
    ],
)
def test_crash_and_restart_writes_each_record_once(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, point: str
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    # An input topic whose replayed batches Spark numbers in another task order: the sink's
    # slots (sink_slots) must still give each marker the same rows.
    in_topic, out_topic = renumbered_topic("crash-in"), unique("crash-out")
    create_topic(bootstrap, in_topic, 3)
    create_topic(bootstrap, out_topic, 3)
    produce_numbered(bootstrap, in_topic, 900)
    args = [
        "--bootstrap",
        bootstrap,
        "--in-topic",
        in_topic,
        "--out-topic",
        out_topic,
        "--checkpoint",
        str(tmp_path / "ckpt"),
        "--sink-id",
        unique("crash"),
        "--max-per-trigger",
        "300",
    ]
    marker = tmp_path / "crashed"
    env = {CRASH_AT_ENV: f"{point}:1", CRASH_MARKER_ENV: str(marker)}
    log = tmp_path / "job.log"

    code, before = run_crash_job(args, env, log)
    assert code == -9, log.read_text()[-3000:]
    assert marker.exists()
    assert [r["batch_id"] for r in before] == [0]
    assert not (tmp_path / "ckpt" / "commits" / "1").exists()

    code, after = run_crash_job(args, env, log)
    assert code == 0, log.read_text()[-3000:]
    assert after[0]["batch_id"] == 1  # Spark replays the batch it had not committed
    replay = after[0]
    if point == "after_sink_commit":
        # Every task of batch 1 committed before the crash: the replay writes nothing.
        assert replay["rows_written"] == 0 and replay["tasks_written"] == 0
        assert replay["tasks_skipped"] >= 1
    else:
        # Task 0 died mid-transaction: its replay wrote it again; the first half it had
        # produced is in the log but aborted, visible only to read_uncommitted readers.
        assert replay["tasks_written"] >= 1
        uncommitted = read_values(bootstrap, out_topic, 3, isolation="read_uncommitted")
        assert len(uncommitted) > 900
    values = read_values(bootstrap, out_topic, 3)
    assert sorted(values, key=int) == [str(i) for i in range(900)]
    # Batch 1's rows committed before the crash were never reported: fewer rows reported.
    reported = sum(r["rows_written"] for r in before + after)
    assert reported < 900 if point == "after_sink_commit" else reported <= 900


def _crash_job_main(argv: list[str] | None = None) -> int:
    """The job the crash tests kill: Kafka -> sink, availableNow, one report line a batch."""
    parser = argparse.ArgumentParser()
    for name in ("--bootstrap", "--in-topic", "--out-topic", "--checkpoint", "--sink-id"):
        parser.add_argument(name, required=True)
    parser.add_argument("--max-per-trigger", type=int, default=300)
    args = parser.parse_args(argv)

    from airflow_provider_kafkaspark.spark.local_session import local_spark_session

    spark = local_spark_session("kafkaspark-sink-crash")
    sink = new_sink(args.bootstrap, args.out_topic, sink_id=args.sink_id, query_id="crash-q")

    def write(batch: DataFrame, batch_id: int) -> None:
        # Printed after write_batch returns: a crash after the sink's commit loses this line
        # just as it loses Spark's commit log.
        report = sink.write_batch(batch, batch_id)
        print("REPORT " + json.dumps(report.to_dict()), flush=True)

    kafka_to_sink_query(
        spark, args.bootstrap, args.in_topic, Path(args.checkpoint), write, args.max_per_trigger
    )
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(_crash_job_main())
