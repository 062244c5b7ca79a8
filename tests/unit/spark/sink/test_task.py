"""One slot of a batch on the executor (`spark/sink/task.py`): the task protocol against a
fake cluster (client reuse, fencing, markers, error kinds, the crash point inside a task)."""

from __future__ import annotations

import dataclasses
import os
import pickle
from dataclasses import asdict

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from airflow_provider_kafkaspark.errors import KafkaRequestError
from airflow_provider_kafkaspark.spark.sink import fault_points
from airflow_provider_kafkaspark.spark.sink import task as sink_task
from airflow_provider_kafkaspark.spark.sink.clients import close_cached_clients
from airflow_provider_kafkaspark.spark.sink.fault_points import (
    CRASH_AT_ENV,
    CRASH_MARKER_ENV,
    DURING_SINK_WRITE,
)
from airflow_provider_kafkaspark.spark.sink.producer import (
    FatalProducerError,
    FencedOrRetriableError,
)
from airflow_provider_kafkaspark.spark.sink.task import (
    REUSED_MARKER_TIMEOUT_S,
    TaskResult,
    write_task,
)
from tests.sink_cache import forget_marker
from tests.unit.spark.sink.fakes import (
    BOOTSTRAP,
    FakeCluster,
    FakeProducer,
    fenced_error,
    make_sink,
    run_task,
    usurp,
)


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


def test_task_results_keep_phases_and_producer_origin() -> None:
    result = TaskResult(0, "written", 3, 0.2, {"produce": 0.1}, "reused", 42)
    assert TaskResult(**pickle.loads(pickle.dumps(asdict(result)))) == result
    assert TaskResult(1, "empty", 0, 0.1).phases == {}


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
