"""Stand-ins for the exactly-once sink's unit tests: a sink with test settings, and a fake
Kafka cluster (transactions, epochs that fence, markers) behind fake confluent_kafka clients."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from airflow_provider_kafkaspark.spark.sink.driver import ExactlyOnceKafkaSink
from airflow_provider_kafkaspark.spark.sink.task import TaskResult, write_task

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


def run_task(sink: ExactlyOnceKafkaSink, batch: int, rows: list[str], task: int = 0) -> TaskResult:
    results = list(write_task(sink.task_config(["value"]), batch, task, [(v,) for v in rows]))
    assert len(results) == 1
    return TaskResult(**results[0])


def usurp(sink: ExactlyOnceKafkaSink, task: int = 0) -> FakeProducer:
    """A newer producer with the task's transactional.id: another worker, a restarted job."""
    newer = FakeProducer({"transactional.id": sink.transactional_id(task)})
    newer.init_transactions(1)
    return newer
