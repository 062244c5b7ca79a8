"""The exactly-once Kafka sink's pure parts (names, schema checks, config, reports, crash env,
error kinds) and its task protocol against a fake cluster."""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from airflow_provider_kafkaspark.core.kafka_client import fenced_or_retriable, retry_worthy
from airflow_provider_kafkaspark.errors import InvalidInputError, KafkaRequestError
from airflow_provider_kafkaspark.spark.sink import fault_points
from airflow_provider_kafkaspark.spark.sink import task as sink_task
from airflow_provider_kafkaspark.spark.sink.clients import ClientCache
from airflow_provider_kafkaspark.spark.sink.config import SinkTaskConfig, already_committed
from airflow_provider_kafkaspark.spark.sink.driver import (
    DEFAULT_TRANSACTION_TIMEOUT_MS,
    REUSED_MARKER_TIMEOUT_S,
    ExactlyOnceKafkaSink,
    SinkBatchReport,
    TaskResult,
    close_cached_clients,
    write_task,
)
from airflow_provider_kafkaspark.spark.sink.fault_points import (
    AFTER_SINK_COMMIT,
    CRASH_AT_ENV,
    CRASH_MARKER_ENV,
    DURING_SINK_WRITE,
    should_crash,
)
from airflow_provider_kafkaspark.spark.sink.producer import (
    FatalProducerError,
    FencedOrRetriableError,
    ProducerLog,
)
from airflow_provider_kafkaspark.spark.sink.rows import (
    arrow_rows,
    plain_rows,
    positional,
    produce_arguments,
)
from airflow_provider_kafkaspark.spark.sink.schema import connection_settings, sink_columns
from tests.sink_cache import forget_marker

BOOTSTRAP = {"bootstrap.servers": "127.0.0.1:9"}


def make_sink(**overrides: object) -> ExactlyOnceKafkaSink:
    kwargs: dict[str, object] = {
        "producer_config": BOOTSTRAP,
        "topic": "out",
        "sink_id": "orders",
        "query_id": "q-1",
    }
    kwargs.update(overrides)
    return ExactlyOnceKafkaSink(**kwargs)  # type: ignore[arg-type]


# -- names -------------------------------------------------------------------------------


def test_transactional_id_and_marker_group_follow_the_protocol() -> None:
    sink = make_sink()
    assert sink.transactional_id(0) == "orders-0"
    assert sink.transactional_id(12) == "orders-12"
    assert sink.marker_group(3) == "orders.q-1.p3"
    # Different queries of one sink id never share markers; ids do not depend on the query.
    other = make_sink(query_id="q-2")
    assert other.marker_group(3) != sink.marker_group(3)
    assert other.transactional_id(3) == sink.transactional_id(3)


@pytest.mark.parametrize(
    ("marker", "batch", "committed"),
    [(-1001, 0, False), (0, 0, False), (1, 0, True), (5, 4, True), (5, 5, False), (9, 5, True)],
)
def test_marker_offset_is_batch_plus_one(marker: int, batch: int, committed: bool) -> None:
    assert already_committed(marker, batch) is committed


# -- schema ------------------------------------------------------------------------------


def test_value_only_and_all_columns_in_a_fixed_order() -> None:
    assert sink_columns([("value", "string")]) == ["value"]
    fields = [
        ("headers", "array<struct<key:string,value:binary>>"),
        ("partition", "int"),
        ("extra", "double"),
        ("key", "binary"),
        ("value", "binary"),
    ]
    assert sink_columns(fields) == ["value", "key", "partition", "headers"]
    assert sink_columns([("value", "string"), ("key", "void")]) == ["value", "key"]


def test_missing_value_names_the_column() -> None:
    with pytest.raises(InvalidInputError, match="no `value` column") as info:
        sink_columns([("payload", "string"), ("key", "string")])
    assert "payload" in str(info.value)


def test_value_with_wrong_case_gets_a_hint() -> None:
    with pytest.raises(InvalidInputError, match="found 'Value'"):
        sink_columns([("Value", "string")])


@pytest.mark.parametrize(
    ("fields", "column"),
    [
        ([("value", "int")], "`value` is int"),
        ([("value", "string"), ("key", "int")], "`key` is int"),
        ([("value", "string"), ("partition", "string")], "`partition` is string"),
        ([("value", "string"), ("headers", "map<string,string>")], "`headers` is map"),
        ([("value", "string"), ("topic", "string")], "`topic` is not supported"),
    ],
)
def test_bad_column_types_name_the_column(fields: list[tuple[str, str]], column: str) -> None:
    with pytest.raises(InvalidInputError, match=column):
        sink_columns(fields)


# -- configuration -----------------------------------------------------------------------


def test_task_config_is_plain_and_picklable() -> None:
    sink = make_sink(producer_config={**BOOTSTRAP, "linger.ms": 5, "sasl.password": "secret"})
    config = sink.task_config(["value", "key"])
    assert isinstance(config, SinkTaskConfig)
    restored = pickle.loads(pickle.dumps(config))
    assert restored == config
    producer = config.producer_config
    assert producer["enable.idempotence"] is True
    assert producer["transaction.timeout.ms"] == DEFAULT_TRANSACTION_TIMEOUT_MS
    assert "transactional.id" not in producer  # set per task on the executor
    # The marker consumer gets how to connect and log in, not producer tuning.
    assert config.consumer_config == {**BOOTSTRAP, "sasl.password": "secret"}
    assert config.columns == ("value", "key")
    assert config.driver_pid == os.getpid()
    assert config.slots is None and config.crash is None


def test_task_config_is_frozen_and_maps_task_indexes_to_slots() -> None:
    sink = make_sink()
    config = sink.task_config(["value"], slots=[2, 0, 1], crash=DURING_SINK_WRITE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.topic = "other"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(config)) == config
    assert config.slots == (2, 0, 1) and config.crash == DURING_SINK_WRITE
    assert [config.slot(i) for i in range(3)] == [2, 0, 1]
    assert sink.task_config(["value"]).slot(7) == 7  # no slots: the index itself


def test_default_transaction_timeout_is_short_but_under_the_broker_cap() -> None:
    assert 10_000 <= DEFAULT_TRANSACTION_TIMEOUT_MS <= 900_000
    config = make_sink(transaction_timeout_ms=5_000).task_config(["value"])
    assert config.producer_config["transaction.timeout.ms"] == 5_000


def test_connection_settings_keep_security_drop_tuning() -> None:
    config = {
        "bootstrap.servers": "b:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "ssl.ca.location": "/ca.pem",
        "acks": "all",
        "linger.ms": 10,
        "compression.type": "lz4",
    }
    assert connection_settings(config) == {
        "bootstrap.servers": "b:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "ssl.ca.location": "/ca.pem",
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"producer_config": {**BOOTSTRAP, "transactional.id": "x"}}, "`transactional.id`"),
        ({"producer_config": {**BOOTSTRAP, "transaction.timeout.ms": 1}}, "transaction_timeout"),
        ({"producer_config": {**BOOTSTRAP, "enable.idempotence": False}}, "enable.idempotence"),
        ({"producer_config": {"linger.ms": 5}}, "bootstrap.servers"),
        ({"producer_config": {**BOOTSTRAP, "error_cb": print}}, "`error_cb`"),
        ({"consumer_config": {**BOOTSTRAP, "group.id": "g"}}, "`group.id`"),
        ({"topic": ""}, "topic"),
        ({"sink_id": "a b"}, "sink_id"),
        ({"query_id": "q/1"}, "query_id"),
        ({"transaction_timeout_ms": 0}, "transaction_timeout_ms must be positive"),
        ({"transaction_timeout_ms": 1.5}, "transaction_timeout_ms must be an integer"),
    ],
)
def test_bad_configuration_is_refused(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        make_sink(**overrides)


def test_refusals_never_echo_secret_values() -> None:
    with pytest.raises(InvalidInputError) as info:
        make_sink(producer_config={**BOOTSTRAP, "sasl.password": object()})
    assert "sasl.password" in str(info.value) and "object at" not in str(info.value)


# -- reports -----------------------------------------------------------------------------


def test_report_counts_written_skipped_and_empty_tasks() -> None:
    results = [
        TaskResult(0, "written", 10, 0.5),
        TaskResult(1, "skipped", 0, 0.1),
        TaskResult(2, "empty", 0, 0.1),
        TaskResult(3, "written", 7, 0.4),
    ]
    report = SinkBatchReport.of(4, results, 1.23456)
    assert report.to_dict() == {
        "batch_id": 4,
        "tasks": 4,
        "tasks_written": 2,
        "tasks_skipped": 1,
        "tasks_empty": 1,
        "rows_written": 17,
        "seconds": 1.235,
    }


def test_sink_keeps_no_reports_until_a_batch_ran() -> None:
    sink = make_sink(keep_reports=2)
    assert sink.reports == [] and sink.last_report is None


# -- retry decisions ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "worth"),
    [
        (KafkaError(KafkaError.NOT_COORDINATOR), True),
        (KafkaError(KafkaError.UNSTABLE_OFFSET_COMMIT), True),
        (KafkaError(3, retriable=True), True),
        # Fatal (fenced and friends): never. Abortable: abort, not retry.
        (KafkaError(KafkaError.NOT_COORDINATOR, fatal=True), False),
        (KafkaError(KafkaError.NOT_COORDINATOR, txn_requires_abort=True), False),
        (KafkaError(KafkaError.INVALID_PRODUCER_EPOCH), False),
        (None, False),
    ],
)
def test_retry_only_what_another_try_can_fix(error: KafkaError | None, worth: bool) -> None:
    assert retry_worthy(error) is worth


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (KafkaError(KafkaError._FENCED, fatal=True), "fenced_or_retriable"),
        (KafkaError(KafkaError.PRODUCER_FENCED, fatal=True), "fenced_or_retriable"),
        (KafkaError(KafkaError.INVALID_PRODUCER_EPOCH), "fenced_or_retriable"),
        (KafkaError(KafkaError.INVALID_PRODUCER_ID_MAPPING), "fenced_or_retriable"),
        (KafkaError(KafkaError._TIMED_OUT), "fenced_or_retriable"),
        (KafkaError(KafkaError.NOT_COORDINATOR), "fenced_or_retriable"),
        (KafkaError(3, retriable=True), "fenced_or_retriable"),
        (KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, fatal=True), "fatal"),
        (KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED), "fatal"),
        (KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, txn_requires_abort=True), "fatal"),
        (KafkaError(KafkaError._TIMED_OUT, fatal=True), "fatal"),
        (None, "fatal"),
    ],
)
def test_producer_errors_come_in_two_kinds(error: KafkaError | None, kind: str) -> None:
    expected = kind == "fenced_or_retriable"
    assert fenced_or_retriable(error) is expected


# -- crash hooks -------------------------------------------------------------------------


def test_should_crash_only_at_the_named_point_and_batch() -> None:
    env = {CRASH_AT_ENV: "after_sink_commit:3"}
    assert should_crash(env, AFTER_SINK_COMMIT, 3)
    assert not should_crash(env, AFTER_SINK_COMMIT, 2)
    assert not should_crash(env, AFTER_SINK_COMMIT, 33)
    assert not should_crash(env, DURING_SINK_WRITE, 3)
    assert not should_crash({}, AFTER_SINK_COMMIT, 3)
    assert not should_crash({CRASH_AT_ENV: ""}, AFTER_SINK_COMMIT, 3)
    assert should_crash({CRASH_AT_ENV: " during_sink_write:0 "}, DURING_SINK_WRITE, 0)


def test_crash_marker_makes_the_crash_happen_once(tmp_path: Path) -> None:
    marker = tmp_path / "crashed"
    env = {CRASH_AT_ENV: "during_sink_write:1", CRASH_MARKER_ENV: str(marker)}
    assert should_crash(env, DURING_SINK_WRITE, 1)
    marker.write_text("done")
    assert not should_crash(env, DURING_SINK_WRITE, 1)


def test_maybe_crash_hands_over_only_when_armed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    crashes: list[tuple[str, int, str, int | None]] = []
    monkeypatch.setattr(
        fault_points,
        "crash_now",
        lambda point, batch, *, marker, driver_pid: crashes.append(
            (point, batch, marker, driver_pid)
        ),
    )
    monkeypatch.delenv(CRASH_AT_ENV, raising=False)
    fault_points.maybe_crash(AFTER_SINK_COMMIT, 0)
    monkeypatch.setenv(CRASH_AT_ENV, "after_sink_commit:7")
    monkeypatch.setenv(CRASH_MARKER_ENV, str(tmp_path / "crashed"))
    fault_points.maybe_crash(AFTER_SINK_COMMIT, 6)
    assert crashes == []
    fault_points.maybe_crash(AFTER_SINK_COMMIT, 7, driver_pid=42)
    assert crashes == [(AFTER_SINK_COMMIT, 7, str(tmp_path / "crashed"), 42)]


# -- client reuse, against a fake cluster --------------------------------------------------


class FakeCluster:
    """Just enough of Kafka's transaction protocol: epochs that fence, markers, a log."""

    def __init__(self) -> None:
        self.epochs: dict[str, int] = {}
        self.markers: dict[str, int] = {}
        self.log: list[object] = []
        self.producers: list[FakeProducer] = []
        self.consumers: list[FakeConsumer] = []
        # Run once, right after the next marker read has its answer.
        self.after_marker_read: list[Callable[[], None]] = []


CLUSTER = FakeCluster()


def fenced_error() -> KafkaException:
    return KafkaException(KafkaError(KafkaError._FENCED, "fenced by a newer producer", fatal=True))


class FakeProducer:
    def __init__(self, config: dict[str, object]) -> None:
        self.txn_id = str(config["transactional.id"])
        self.epoch: int | None = None
        self.closed = False
        self.in_txn = False
        self.rows: list[object] = []
        self.marker: tuple[str, int] | None = None
        self.fail_produce_after: int | None = None
        self.produce_error: KafkaException | None = None  # what fail_produce_after raises
        self.send_offsets_error: KafkaException | None = None
        self.calls: list[str] = []
        CLUSTER.producers.append(self)

    def _check(self) -> None:
        assert not self.closed
        if CLUSTER.epochs.get(self.txn_id) != self.epoch:
            raise fenced_error()

    def list_topics(self, topic: str, timeout: float) -> SimpleNamespace:
        return SimpleNamespace(orig_broker_id=1)

    def init_transactions(self, timeout: float) -> None:
        self.calls.append("init")
        self.epoch = CLUSTER.epochs.get(self.txn_id, 0) + 1
        CLUSTER.epochs[self.txn_id] = self.epoch

    def begin_transaction(self) -> None:
        self.calls.append("begin")
        assert self.epoch is not None and not self.in_txn
        self.in_txn, self.rows, self.marker = True, [], None

    def send_offsets_to_transaction(
        self, offsets: list[Any], metadata: str, timeout: float
    ) -> None:
        self.calls.append("send_offsets")
        if self.send_offsets_error is not None:
            raise self.send_offsets_error
        self._check()
        self.marker = (metadata, offsets[0].offset)

    def produce(self, topic: str, value: object = None, **kwargs: object) -> None:
        if self.fail_produce_after is not None and len(self.rows) >= self.fail_produce_after:
            raise self.produce_error or KafkaException(
                KafkaError(KafkaError._FENCED, "fenced mid-write", fatal=True)
            )
        self.rows.append(value)

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        self.calls.append(f"flush after {len(self.rows)}")
        return 0

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append("commit")
        self._check()
        assert self.marker is not None, "the marker goes into every transaction"
        CLUSTER.log.extend(self.rows)
        CLUSTER.markers[self.marker[0]] = self.marker[1]
        self.in_txn = False

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append("abort")
        self.in_txn = False

    def close(self) -> None:
        self.closed = True


class FakeConsumer:
    def __init__(self, config: dict[str, object]) -> None:
        assert config["isolation.level"] == "read_committed"
        self.group = str(config["group.id"])
        self.closed = False
        self.reads: list[float] = []
        self.times_out = False
        CLUSTER.consumers.append(self)

    def committed(self, partitions: list[Any], timeout: float) -> list[SimpleNamespace]:
        assert not self.closed
        self.reads.append(timeout)
        if self.times_out:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out"))
        answer = [SimpleNamespace(offset=CLUSTER.markers.get(self.group, -1001), error=None)]
        hooks, CLUSTER.after_marker_read = CLUSTER.after_marker_read, []
        for hook in hooks:
            hook()
        return answer

    def consumer_group_metadata(self) -> str:
        return self.group

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_kafka(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCluster]:
    global CLUSTER
    CLUSTER = FakeCluster()
    monkeypatch.setattr(confluent_kafka, "Producer", FakeProducer)
    monkeypatch.setattr(confluent_kafka, "Consumer", FakeConsumer)
    close_cached_clients()
    yield CLUSTER
    close_cached_clients()


def run_task(sink: ExactlyOnceKafkaSink, batch: int, rows: list[str], task: int = 0) -> TaskResult:
    results = list(write_task(sink.task_config(["value"]), batch, task, [(v,) for v in rows]))
    assert len(results) == 1
    return TaskResult(**results[0])


def usurp(sink: ExactlyOnceKafkaSink, task: int = 0) -> FakeProducer:
    """A newer producer with the task's transactional.id: another worker, a restarted job."""
    newer = FakeProducer({"transactional.id": sink.transactional_id(task)})
    newer.init_transactions(1)
    return newer


def test_a_worker_reuses_its_producer_and_consumer_across_batches(
    fake_kafka: FakeCluster,
) -> None:
    sink = make_sink()
    results = [run_task(sink, b, [f"{b}-a", f"{b}-b"]) for b in range(4)]
    assert [r.producer for r in results] == ["created", "reused", "reused", "reused"]
    assert [r.status for r in results] == ["written"] * 4
    assert len(fake_kafka.producers) == 1 and len(fake_kafka.consumers) == 1
    assert fake_kafka.producers[0].calls.count("init") == 1
    # The marker is read by the new producer's task only: the reused producer committed
    # every marker since, so it knows them (docs: "Markers a producer already knows").
    assert len(fake_kafka.consumers[0].reads) == 1
    assert fake_kafka.markers[sink.marker_group(0)] == 4
    assert fake_kafka.log == [f"{b}-{x}" for b in range(4) for x in "ab"]
    assert "init_transactions" in results[0].phases and "init_transactions" not in results[1].phases
    # A replay of a committed batch is skipped by the reused producer too, without a read.
    assert run_task(sink, 2, ["2-a", "2-b"]).status == "skipped"
    assert len(fake_kafka.log) == 8
    assert len(fake_kafka.consumers[0].reads) == 1


def test_the_marker_goes_in_before_any_row(fake_kafka: FakeCluster) -> None:
    sink = make_sink()
    run_task(sink, 0, ["a"])
    assert fake_kafka.producers[0].calls == ["init", "begin", "send_offsets", "commit"]


def test_a_fenced_cached_producer_is_replaced_in_task_and_writes_once(
    fake_kafka: FakeCluster,
) -> None:
    sink = make_sink()
    assert run_task(sink, 0, ["0-a"]).producer == "created"
    cached = fake_kafka.producers[0]
    newer = usurp(sink)
    newer.begin_transaction()  # and leaves a transaction open, e.g. it died mid-write
    newer.produce("out", "zombie")

    result = run_task(sink, 1, ["1-a", "1-b"])

    assert (result.status, result.producer, result.rows) == ("written", "replaced", 2)
    # Its second transaction got as far as the marker, which the coordinator refused.
    assert cached.closed
    assert cached.calls == ["init", "begin", "send_offsets", "commit", "begin", "send_offsets"]
    replacement = fake_kafka.producers[-1]
    assert replacement.calls == ["init", "begin", "send_offsets", "commit"]
    # The cached producer knew the marker it had committed, so only the replacement read it
    # (the marker consumer itself was fine: kept).
    assert len(fake_kafka.consumers) == 1 and fake_kafka.consumers[0].reads[1:] == [60.0]
    assert fake_kafka.log == ["0-a", "1-a", "1-b"]
    assert fake_kafka.markers[sink.marker_group(0)] == 2
    with pytest.raises(KafkaException):  # the replacement fenced the newer one in turn
        newer.send_offsets_to_transaction([TopicPartition("out", 0, 2)], "g", 1)
    assert run_task(sink, 2, ["2-a"]).producer == "reused"


def test_a_batch_committed_by_a_newer_producer_is_skipped_after_the_replacement(
    fake_kafka: FakeCluster,
) -> None:
    """A newer producer committed the batch since the cached one committed its marker: what
    the cached one knows says "not committed", it is fenced at send_offsets, and the marker
    its replacement reads says skip."""
    sink = make_sink()
    run_task(sink, 0, ["0-a"])
    newer = usurp(sink)
    newer.begin_transaction()
    newer.send_offsets_to_transaction([TopicPartition("out", 0, 2)], sink.marker_group(0), 1)
    newer.produce("out", "1-a")
    newer.commit_transaction(1)

    result = run_task(sink, 1, ["1-a"])

    assert (result.status, result.producer, result.rows) == ("skipped", "replaced", 0)
    assert fake_kafka.log == ["0-a", "1-a"]  # once, by the other producer
    assert fake_kafka.markers[sink.marker_group(0)] == 2
    assert fake_kafka.producers[0].calls[-2:] == ["begin", "send_offsets"]


def test_a_known_marker_past_the_batch_skips_it_without_a_request_even_if_fenced(
    fake_kafka: FakeCluster,
) -> None:
    """Markers only move forward: a batch the cached producer saw committed stays
    committed, whoever has the transactional.id now."""
    sink = make_sink()
    for b in range(3):
        run_task(sink, b, [f"{b}-a"])
    cached, consumer = fake_kafka.producers[0], fake_kafka.consumers[0]
    calls, reads = list(cached.calls), list(consumer.reads)
    usurp(sink)

    result = run_task(sink, 1, ["1-a"])

    assert (result.status, result.producer, result.rows) == ("skipped", "reused", 0)
    assert cached.calls == calls and consumer.reads == reads
    assert fake_kafka.log == ["0-a", "1-a", "2-a"]


def test_a_batch_committed_while_reused_clients_read_the_marker_is_skipped(
    fake_kafka: FakeCluster,
) -> None:
    """A producer that knows no marker reads it through reused clients; the newer producer
    commits the batch after that read: the reused producer is fenced at send_offsets, and
    the marker read again says skip."""
    sink = make_sink()
    run_task(sink, 0, ["0-a"])
    forget_marker(sink)

    def other_worker_commits_batch_1() -> None:
        newer = usurp(sink)
        newer.begin_transaction()
        newer.send_offsets_to_transaction([TopicPartition("out", 0, 2)], sink.marker_group(0), 1)
        newer.produce("out", "1-a")
        newer.commit_transaction(1)

    fake_kafka.after_marker_read.append(other_worker_commits_batch_1)
    result = run_task(sink, 1, ["1-a"])

    assert (result.status, result.producer, result.rows) == ("skipped", "replaced", 0)
    assert fake_kafka.log == ["0-a", "1-a"]  # once, by the other producer
    assert fake_kafka.markers[sink.marker_group(0)] == 2


def test_a_failed_marker_read_replaces_the_consumer_and_the_producer(
    fake_kafka: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E.g. a pending marker commit of a newer producer that died: the read times out."""
    monkeypatch.setattr(sink_task, "REUSED_MARKER_TIMEOUT_S", 0.01)
    sink = make_sink()
    run_task(sink, 0, ["0-a"])
    forget_marker(sink)
    cached_consumer = fake_kafka.consumers[0]
    cached_consumer.times_out = True
    result = run_task(sink, 1, ["1-a"])
    assert (result.status, result.producer, result.rows) == ("written", "replaced", 1)
    assert cached_consumer.closed and fake_kafka.producers[0].closed
    assert len(fake_kafka.consumers) == 2 and len(fake_kafka.producers) == 2
    assert fake_kafka.log == ["0-a", "1-a"]


def test_an_error_after_the_first_row_fails_the_task_and_drops_the_producer(
    fake_kafka: FakeCluster,
) -> None:
    sink = make_sink()
    run_task(sink, 0, ["0-a"])
    cached = fake_kafka.producers[0]
    cached.fail_produce_after = 1
    with pytest.raises(KafkaRequestError, match="producing rows failed"):
        run_task(sink, 1, ["1-a", "1-b", "1-c"])
    assert cached.closed
    assert fake_kafka.log == ["0-a"]
    # The next task starts from a new producer, which fences and aborts what was left.
    result = run_task(sink, 1, ["1-a", "1-b", "1-c"])
    assert (result.status, result.producer, result.rows) == ("written", "created", 3)
    assert fake_kafka.log == ["0-a", "1-a", "1-b", "1-c"]


def test_errors_of_a_new_producer_are_raised_as_before(fake_kafka: FakeCluster) -> None:
    sink = make_sink()
    run_task(sink, 0, ["0-a"])
    usurp(sink)
    close_cached_clients()

    def fenced_init(self: FakeProducer, timeout: float) -> None:
        raise fenced_error()

    original = FakeProducer.init_transactions
    FakeProducer.init_transactions = fenced_init  # type: ignore[method-assign]
    try:
        with pytest.raises(KafkaRequestError, match="init_transactions failed"):
            run_task(sink, 1, ["1-a"])
    finally:
        FakeProducer.init_transactions = original  # type: ignore[method-assign]
    newer_and_failed = fake_kafka.producers[1:]
    assert not newer_and_failed[0].closed and all(p.closed for p in newer_and_failed[1:])


def test_reused_clients_get_a_short_marker_read_new_ones_the_full_timeout(
    fake_kafka: FakeCluster,
) -> None:
    sink = make_sink(operation_timeout_s=30)
    run_task(sink, 0, ["0-a"])
    forget_marker(sink)
    run_task(sink, 1, ["1-a"])
    assert fake_kafka.consumers[0].reads == [30.0, REUSED_MARKER_TIMEOUT_S]


def test_empty_task_creates_a_producer_only_when_none_is_cached(
    fake_kafka: FakeCluster,
) -> None:
    sink = make_sink()
    assert run_task(sink, 0, [], task=1).status == "empty"
    assert fake_kafka.producers[0].calls == ["init"]  # fences zombies, opens nothing
    assert sink.marker_group(1) not in fake_kafka.markers
    assert run_task(sink, 1, [], task=1).producer == "reused"
    assert len(fake_kafka.producers) == 1 and fake_kafka.producers[0].calls == ["init"]


def test_without_reuse_every_task_creates_and_closes_its_clients(
    fake_kafka: FakeCluster,
) -> None:
    sink = make_sink(reuse_clients=False)
    results = [run_task(sink, b, [str(b)]) for b in range(3)]
    assert [r.producer for r in results] == ["created"] * 3
    assert len(fake_kafka.producers) == 3 and all(p.closed for p in fake_kafka.producers)
    assert all(c.closed for c in fake_kafka.consumers)
    assert fake_kafka.log == ["0", "1", "2"]


def test_other_settings_never_reuse_a_cached_producer(fake_kafka: FakeCluster) -> None:
    run_task(make_sink(), 0, ["a"])
    other = make_sink(producer_config={**BOOTSTRAP, "linger.ms": 50})
    assert run_task(other, 1, ["b"]).producer == "created"
    assert fake_kafka.producers[0].closed  # one producer per transactional.id per process
    assert run_task(other, 2, ["c"]).producer == "reused"


def test_cache_keeps_at_most_its_limit_and_closes_the_oldest() -> None:
    cache = ClientCache(limit=2)
    producers: list[Any] = [FakeProducer({"transactional.id": f"s-{i}"}) for i in range(3)]
    consumers: list[Any] = [
        FakeConsumer({"group.id": f"g{i}", "isolation.level": "read_committed"}) for i in range(3)
    ]
    for i in range(3):
        cache.put(f"s-{i}", "k", producers[i], f"g{i}", "c", consumers[i])
    assert cache.sizes() == (2, 2)
    assert producers[0].closed and consumers[0].closed
    assert cache.take("s-2", "k", "g2", "c") == (producers[2], consumers[2])
    assert cache.take("s-2", "k", "g2", "c") == (None, None)  # taken out while in use
    assert cache.clear() == 2 and producers[1].closed


def test_a_forked_child_never_uses_its_parents_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ClientCache(limit=4)
    producer: Any = FakeProducer({"transactional.id": "s-0"})
    cache.put("s-0", "k", producer, "g", "c", None)
    monkeypatch.setattr(os, "getpid", lambda: -1)
    assert cache.take("s-0", "k", "g", "c") == (None, None)
    assert not producer.closed  # not destroyed either: its threads are not in the child


def test_task_results_keep_phases_and_producer_origin() -> None:
    result = TaskResult(0, "written", 3, 0.2, {"produce": 0.1}, "reused", 42)
    assert TaskResult(**pickle.loads(pickle.dumps(asdict(result)))) == result
    assert TaskResult(1, "empty", 0, 0.1).phases == {}


def test_arrow_batches_become_the_row_tuples_the_rdd_path_gives() -> None:
    pa = pytest.importorskip("pyarrow")
    headers_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array([b"a", None], pa.binary()),
            pa.array(["k", None]),
            pa.array([2, None], pa.int32()),
            pa.array([[{"key": "h", "value": b"1"}], None], headers_type),
        ],
        names=["value", "key", "partition", "headers"],
    )
    columns = ("value", "key", "partition", "headers")
    assert list(arrow_rows([batch, batch.slice(0, 1)], columns)) == [
        (b"a", "k", 2, [("h", b"1")]),
        (None, None, None, None),
        (b"a", "k", 2, [("h", b"1")]),
    ]
    # Only the configured columns, in their order.
    assert list(arrow_rows([batch], ("value",))) == [(b"a",), (None,)]


def test_arrow_is_the_default_when_pyarrow_is_there() -> None:
    pytest.importorskip("pyarrow")
    assert make_sink().arrow is True
    assert make_sink(arrow=False).arrow is False
    assert make_sink().task_config(["value"]).reuse_clients is True


def test_librdkafka_fencing_lines_are_one_info_line_per_producer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="airflow_provider_kafkaspark.spark.sink")
    sink_log = ProducerLog("kafkaspark-sink-0")
    fatal = "Fatal error: Broker: Producer attempted an operation with an old epoch: fenced"
    for _ in range(3):
        sink_log.log(logging.CRITICAL, "%s [%s] %s", "FATAL", "rdkafka#producer-1", fatal)
    sink_log.log(logging.WARNING, "%s [%s] %s", "FAIL", "rdkafka#producer-1", "Disconnected")
    seen = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in seen] == [logging.INFO, logging.WARNING]
    assert "kafkaspark-sink-0 was fenced" in seen[0][1] and "old epoch" in seen[0][1]
    assert seen[1][1] == "librdkafka: FAIL [rdkafka#producer-1] Disconnected"


def test_pickled_rows_become_plain_tuples_and_produce_arguments() -> None:
    columns = ("value", "key", "partition", "headers")
    pickled = (bytearray(b"v"), bytearray(b"k"), 2, [("h", bytearray(b"1")), ("e", None)])
    [row] = plain_rows([pickled], columns)
    # librdkafka takes bytes or str, not the bytearray pyspark gives binary columns as.
    assert type(row[0]) is bytes and type(row[1]) is bytes and type(row[3][0][1]) is bytes
    assert produce_arguments(columns)(row) == {
        "value": b"v",
        "key": b"k",
        "partition": 2,
        "headers": [("h", b"1"), ("e", None)],
    }
    # A null partition leaves the choice to the partitioner; null headers send none.
    [empty] = plain_rows([(None, None, None, None)], columns)
    assert produce_arguments(columns)(empty) == {"value": None, "key": None}
    # Value and key alone go to produce() as they are, positionally.
    assert positional(("value",)) and positional(("value", "key"))
    assert not positional(("value", "key", "partition")) and not positional(("value", "headers"))


# -- error kinds of a task's producer ------------------------------------------------------


def test_a_new_producer_fenced_at_the_marker_fails_the_task_as_fenced(
    fake_kafka: FakeCluster,
) -> None:
    sink = make_sink(reuse_clients=False)

    def another_worker_takes_over() -> None:
        usurp(sink)

    fake_kafka.after_marker_read.append(another_worker_takes_over)
    with pytest.raises(FencedOrRetriableError, match="send_offsets_to_transaction"):
        run_task(sink, 0, ["a"])
    assert fake_kafka.producers[0].calls == ["init", "begin", "send_offsets"]  # no abort
    assert fake_kafka.log == []


def test_an_abortable_error_aborts_and_fails_the_task_as_fatal(fake_kafka: FakeCluster) -> None:
    sink = make_sink()
    run_task(sink, 0, ["0-a"])
    cached = fake_kafka.producers[0]
    cached.fail_produce_after = 1
    cached.produce_error = KafkaException(
        KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "too large", txn_requires_abort=True)
    )
    with pytest.raises(FatalProducerError, match="producing rows failed") as info:
        run_task(sink, 1, ["1-a", "1-b"])
    assert isinstance(info.value, KafkaRequestError)
    assert cached.calls[-1] == "abort" and cached.closed
    assert fake_kafka.log == ["0-a"]


def test_a_reused_producer_is_replaced_on_a_fatal_error_before_writing(
    fake_kafka: FakeCluster,
) -> None:
    """As before the error kinds existed: any failure of a reused producer before the rows
    starts the task over with a new producer."""
    sink = make_sink()
    run_task(sink, 0, ["0-a"])
    cached = fake_kafka.producers[0]
    cached.send_offsets_error = KafkaException(
        KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "denied", fatal=True)
    )
    result = run_task(sink, 1, ["1-a"])
    assert (result.status, result.producer, result.rows) == ("written", "replaced", 1)
    assert cached.closed and fake_kafka.log == ["0-a", "1-a"]


# -- the crash point inside a task ------------------------------------------------------------


def test_an_armed_crash_fires_in_task_0_halfway_after_a_flush(
    fake_kafka: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashes: list[tuple[str, int, int | None, list[str]]] = []

    def crash_now(point: str, batch: int, *, marker: str, driver_pid: int | None) -> None:
        crashes.append((point, batch, driver_pid, list(fake_kafka.producers[-1].calls)))

    monkeypatch.setattr(fault_points, "crash_now", crash_now)
    monkeypatch.setenv(CRASH_AT_ENV, "during_sink_write:3")
    monkeypatch.delenv(CRASH_MARKER_ENV, raising=False)
    sink = make_sink()
    armed = dataclasses.replace(sink.task_config(["value"]), crash=DURING_SINK_WRITE)
    values = ["a", "b", "c", "d", "e"]

    list(write_task(armed, 3, 1, [(v,) for v in values]))  # only task 0 crashes
    # The environment alone does not arm it: the driver does, in the config.
    unarmed = make_sink(sink_id="other").task_config(["value"])
    list(write_task(unarmed, 3, 0, [(v,) for v in values]))
    assert crashes == []
    (result,) = write_task(armed, 3, 0, [(v,) for v in values])

    # The fake crash returns, so the task goes on; a real one kills the job right there.
    assert crashes == [
        (DURING_SINK_WRITE, 3, os.getpid(), ["init", "begin", "send_offsets", "flush after 2"])
    ]
    assert result["rows"] == 5
