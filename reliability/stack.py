"""Pieces the scenarios share: topics, a steady producer, exactly-once counting, and jobs
started, killed and stopped through the same functions the Airflow operators call
(`airflow_provider_kafkaspark.lifecycle`)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.core.jobspec import JobSpec
from airflow_provider_kafkaspark.core.restart import RestartPolicy
from airflow_provider_kafkaspark.local.jobs import LocalJobHandle

MASTER = "local[2]"


def log(scenario: str, message: str) -> None:
    print(f"[reliability:{scenario}] {message}", flush=True)


def wait_for(
    what: str, predicate: Callable[[], bool], timeout_s: float, poll_s: float = 0.5
) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(poll_s)


# -- Kafka ------------------------------------------------------------------------------


def create_topics(
    bootstrap: str,
    partitions: dict[str, int],
    *,
    replication: int = 1,
    config: dict[str, str] | None = None,
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = [NewTopic(t, n, replication, config=dict(config or {})) for t, n in partitions.items()]
    for future in admin.create_topics(new, operation_timeout=30).values():
        future.result(60)


def add_partitions(bootstrap: str, topic: str, total: int) -> None:
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_partitions([NewPartitions(topic, total)]).values():
        future.result(60)


def partition_count(bootstrap: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30)
    return len(metadata.topics[topic].partitions)


class SteadyProducer(threading.Thread):
    """Produces values str(start) .. str(start + count - 1) at about `rate` records/s.

    Keyed by the value; each record goes to partition value % (the topic's current partition
    count, re-read every second), so partitions added while it runs get records at once.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        count: int,
        rate: float,
        *,
        start: int = 0,
        extra_config: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(daemon=True, name=f"steady-producer-{topic}")
        self.bootstrap, self.topic, self.count, self.rate = bootstrap, topic, count, rate
        self.start_value = start
        self.extra_config = dict(extra_config or {})
        self.acked = 0
        self.errors: list[str] = []
        self.produced = 0
        self._stop_event = threading.Event()

    def stop(self) -> None:
        self._stop_event.set()

    def run(self) -> None:
        from confluent_kafka import KafkaError, KafkaException, Producer

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is None:
                self.acked += 1
            else:
                self.errors.append(str(err))

        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "linger.ms": 5,
                "enable.idempotence": True,
                **self.extra_config,
            }
        )
        partitions = partition_count(self.bootstrap, self.topic)
        began = time.monotonic()
        refreshed = began
        for i in range(self.count):
            if self._stop_event.is_set():
                break
            now = time.monotonic()
            if now - refreshed > 1.0:
                # Metadata can come back empty or fail while a broker is down: keep the
                # count known so far then.
                try:
                    partitions = partition_count(self.bootstrap, self.topic) or partitions
                except KafkaException:
                    pass
                refreshed = now
            ahead = began + i / self.rate - now
            if ahead > 0:
                time.sleep(ahead)
            value = str(self.start_value + i).encode()
            while True:
                try:
                    producer.produce(
                        self.topic,
                        key=value,
                        value=value,
                        partition=(self.start_value + i) % partitions,
                        on_delivery=on_delivery,
                    )
                    break
                except BufferError:
                    producer.poll(0.1)
                except KafkaException as exc:
                    # A partition just added, which this producer's metadata does not know
                    # yet: asking for the topic's metadata refreshes it.
                    if exc.args[0].code() != KafkaError._UNKNOWN_PARTITION:
                        raise
                    producer.list_topics(self.topic, timeout=10)
            self.produced += 1
            producer.poll(0)
        remaining = producer.flush(120)
        if remaining:
            self.errors.append(f"{remaining} records not delivered")

    @property
    def values(self) -> list[str]:
        """The values produced (acked or not: check `errors` before trusting them)."""
        return [str(self.start_value + i) for i in range(self.produced)]


def read_committed(bootstrap: str, topic: str, timeout_s: float = 120) -> list[bytes]:
    """Every value of `topic` a read_committed consumer sees, up to each partition's EOF."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    partitions = partition_count(bootstrap, topic)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kafkaspark-reliability-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    at_end: set[int | None] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic}: only partitions {at_end} at end")
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                continue
            values.append(msg.value() or b"")
    finally:
        consumer.close()
    return values


def produce_all(bootstrap: str, topic: str, *, start: int, count: int) -> None:
    """Produce values str(start) .. str(start + count - 1) now; raises unless all are acked."""
    producer = SteadyProducer(bootstrap, topic, count, rate=5_000, start=start)
    producer.start()
    producer.join(120)
    if producer.is_alive() or producer.errors or producer.acked != count:
        raise RuntimeError(
            f"producing {count} records to {topic}: {producer.acked} acked, "
            f"errors {producer.errors[:3]}"
        )


Marks = dict[int, tuple[int, int]]


def log_marks(bootstrap: str, topic: str, partitions: int) -> Marks:
    """(log start, end) of each partition, from a plain client rather than the project's."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafkaspark-reliability"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            for p in range(partitions)
        }
    finally:
        consumer.close()


def tree_digest(*roots: Path) -> str:
    """sha256 over every file's path and bytes under `roots`: any change, move or new file
    changes it."""
    import hashlib

    digest = hashlib.sha256()
    for root in roots:
        digest.update(f"root {root} exists={root.exists()}\n".encode())
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            digest.update(f"{path.relative_to(root)}\n".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def backups(checkpoint: Path) -> list[Path]:
    """Copies a restore moved aside (`<checkpoint>.backup-<stamp>`)."""
    return sorted(checkpoint.parent.glob(f"{checkpoint.name}.backup-*"))


@dataclass(frozen=True)
class OnceCount:
    """Expected items against items found: each expected one should be found once."""

    checked: int
    duplicates: int
    missing: int
    unexpected: int

    @classmethod
    def of(cls, expected: Iterable[Any], found: Iterable[Any]) -> OnceCount:
        want = Counter(expected)
        got = Counter(found)
        return cls(
            checked=sum(want.values()),
            duplicates=sum(max(0, got[k] - max(1, want[k])) for k in got if k in want),
            missing=sum(1 for k in want if got[k] == 0),
            unexpected=sum(n for k, n in got.items() if k not in want),
        )


# -- jobs -------------------------------------------------------------------------------


def passthrough_spec(
    *,
    bootstrap: str,
    checkpoint: Path,
    source: str,
    sink: str,
    job_name: str,
    max_offsets_per_trigger: int = 5_000,
    trigger_interval: str = "1 second",
    kafka_config: dict[str, str] | None = None,
) -> JobSpec:
    """The stateless variant of the example job: every source record copied once."""
    return JobSpec.from_dict(
        {
            "job_name": job_name,
            "source": {
                "bootstrap_servers": bootstrap,
                "subscribe": [source],
                "starting_offsets": "earliest",
                "max_offsets_per_trigger": max_offsets_per_trigger,
            },
            "transformation": "airflow_provider_kafkaspark.examples.passthrough:transform",
            "sink": {"kind": "kafka_exactly_once", "topic": sink, "output_mode": "append"},
            "checkpoint_location": str(checkpoint),
            "trigger_interval": trigger_interval,
            "kafka_config": dict(kafka_config or {}),
        }
    )


def submit(
    spec: JobSpec, workdir: Path, restart_policy: RestartPolicy | None = None
) -> LocalJobHandle:
    """Start the driver exactly as SubmitStreamingJobOperator does in local mode."""
    from airflow_provider_kafkaspark.lifecycle import JobRunningError, live_lease, submit_local

    lease = live_lease(spec.checkpoint_location)
    if lease is not None:
        raise JobRunningError(f"{spec.checkpoint_location}: a live driver holds the lease")
    raw = submit_local(spec, str(workdir), master=MASTER, restart_policy=restart_policy)
    fields = LocalJobHandle.__dataclass_fields__
    return LocalJobHandle.from_dict({k: v for k, v in raw.items() if k in fields})


def committed(checkpoint: Path) -> int:
    """The last committed batch id, -1 before the first."""
    from airflow_provider_kafkaspark.lifecycle import latest_committed

    try:
        batch = latest_committed(str(checkpoint))
    except Exception:  # noqa: BLE001 - a checkpoint being written for the first time
        return -1
    return -1 if batch is None else batch


def wait_committed_beyond(
    handle: LocalJobHandle, checkpoint: Path, batch: int, timeout_s: float = 180
) -> int:
    """Wait until a batch after `batch` is committed; the driver must stay alive."""
    from airflow_provider_kafkaspark.local.jobs import read_log

    def advanced() -> bool:
        if not handle.is_alive():
            raise RuntimeError(f"driver {handle.pid} exited:\n{read_log(handle)}")
        return committed(checkpoint) > batch

    wait_for(f"a batch after {batch} on {checkpoint}", advanced, timeout_s)
    return committed(checkpoint)


def wait_caught_up(
    handle: LocalJobHandle, checkpoint: Path, bootstrap: str, topics: list[str], timeout_s: float
) -> None:
    """Wait until the checkpoint's committed offsets reach the end of every partition."""
    from airflow_provider_kafkaspark.core.checkpoint import CheckpointReader
    from airflow_provider_kafkaspark.core.kafka_admin import KafkaFacade
    from airflow_provider_kafkaspark.core.observe import caught_up, end_offsets
    from airflow_provider_kafkaspark.local.jobs import read_log

    with KafkaFacade({"bootstrap.servers": bootstrap}) as kafka:

        def done() -> bool:
            if not handle.is_alive():
                raise RuntimeError(f"driver {handle.pid} exited:\n{read_log(handle)}")
            try:
                position = CheckpointReader(str(checkpoint)).position()
            except Exception:  # noqa: BLE001 - not written yet
                return False
            return caught_up(position, end_offsets(kafka, topics))

        wait_for(f"{checkpoint} to catch up with {topics}", done, timeout_s, poll_s=1.0)


def stop(handle: LocalJobHandle, scenario: str) -> int:
    """Graceful stop as StopStreamingJobOperator does it; returns the last committed batch."""
    from airflow_provider_kafkaspark.lifecycle import stop_job
    from airflow_provider_kafkaspark.local.jobs import read_log, wait_exit

    report = stop_job(
        handle.checkpoint,
        requested_by=f"reliability:{scenario}",
        reason="scenario step",
        drain_timeout_s=120,
        pid=handle.pid,
    )
    if report is None or not report.clean:
        raise RuntimeError(f"driver {handle.pid} did not stop cleanly:\n{read_log(handle)}")
    wait_exit(handle, 60)
    return report.last_committed_batch if report.last_committed_batch is not None else -1


def kill(handle: LocalJobHandle) -> None:
    """SIGKILL the driver's whole process group, as a crashed machine would."""
    from airflow_provider_kafkaspark.local.jobs import kill_driver

    kill_driver(handle)
