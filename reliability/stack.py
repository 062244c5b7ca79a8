"""Pieces the scenarios share: topics, a steady producer, exactly-once counting, and jobs
started, killed and stopped through the same functions the Airflow operators call
(`airflow_provider_kafkaspark.lifecycle`)."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypeVar
from unittest import mock

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef
from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

MASTER = "local[2]"
# Where a scenario keeps its checkpoint and savepoints: local disk, or a real S3 server
# (SeaweedFS, started by the project's launcher) reached as a driver and the CLI reach it,
# through the standard AWS variables.
STORAGES = ("local", "s3")
S3_BUCKET = "kafkaspark-reliability"

T = TypeVar("T")


@dataclass(frozen=True)
class StateStorage:
    """The base URL of a scenario's checkpoints and savepoints."""

    kind: str
    base: str

    def url(self, name: str) -> str:
        return f"{self.base.rstrip('/')}/{name}"


@contextlib.contextmanager
def state_storage(kind: str, workdir: Path) -> Iterator[StateStorage]:
    """Local disk under `workdir`, or a bucket of an S3 server started for this block, with
    the AWS variables set for it (the driver inherits them)."""
    if kind == "local":
        yield StateStorage(kind, str(workdir))
        return
    if kind != "s3":
        raise ValueError(f"unknown storage {kind!r}: one of {', '.join(STORAGES)}")
    import s3fs

    from kafkaspark_devstack.s3 import LocalS3Server

    with LocalS3Server(workdir / "s3") as server:
        server.create_bucket(S3_BUCKET)
        # fsspec keeps one S3 file system per set of arguments, and the endpoint of the AWS
        # variables is not among them: one made for an earlier scenario's server would be
        # reused for this one.
        s3fs.S3FileSystem.clear_instance_cache()
        try:
            with mock.patch.dict(os.environ, server.aws_environment()):
                yield StateStorage(kind, f"s3://{S3_BUCKET}/{workdir.name}")
        finally:
            s3fs.S3FileSystem.clear_instance_cache()


def log(scenario: str, message: str) -> None:
    print(f"[reliability:{scenario}] {message}", flush=True)


def wait_for(
    what: str,
    observe: Callable[[], T],
    timeout_s: float,
    poll_s: float = 0.5,
    *,
    done: Callable[[T], bool] = bool,
) -> T:
    """Poll `observe()` until `done(observation)` holds and return that observation.

    Gives up after `timeout_s` with a TimeoutError that says what it waited for, for how
    long, and what it saw last. The bound is a cap for a machine that is slow or stuck, never
    the time something is expected to take: the wait ends as soon as the condition holds.
    Exceptions from `observe` (a driver found dead, say) end the wait at once.
    """
    started = time.monotonic()
    while True:
        seen = observe()
        if done(seen):
            return seen
        waited = time.monotonic() - started
        if waited > timeout_s:
            raise TimeoutError(
                f"gave up after {waited:.0f}s (bound {timeout_s:g}s) waiting for {what}; "
                f"last saw: {_shown(seen)}"
            )
        time.sleep(poll_s)


def _shown(value: Any, limit: int = 600) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


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


def wait_partition_count(bootstrap: str, topic: str, timeout_s: float = 30.0) -> int:
    """The topic's partition count, waiting (bounded) while the broker asked has no metadata
    for a topic just created yet (it answers with no partitions then)."""
    deadline = time.monotonic() + timeout_s
    for _ in range(int(timeout_s / 0.2) + 1):
        count = partition_count(bootstrap, topic)
        if count or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if not count:
        raise RuntimeError(
            f"topic {topic!r} on {bootstrap} still has no partitions after {timeout_s:g}s"
        )
    return count


class Record(NamedTuple):
    """One record a PacedProducer sends: partition None lets the key pick it."""

    key: bytes
    value: bytes
    partition: int | None = None
    timestamp_ms: int | None = None


class PacedProducer(threading.Thread):
    """Produces `record(0)`, `record(1)`, ... to `topic` at about `rate` records/s until the
    scenario calls `stop()` (or `finish()`), or until a cap is reached: `count` records or
    `max_seconds` of producing, whichever comes first.

    The caps are generous limits against a run that never ends, not the amount of input a
    scenario needs: a scenario that needs input flowing until its last fault keeps the
    producer running until then and stops it, however long the faults took on this
    machine. `ended_by` says why it ended ("stop", "count cap", "time cap", or the error
    that ended it); a scenario
    checks what was acked (`acked`, the subclass's own record of acked records), never what
    it meant to produce.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        rate: float,
        *,
        count: int,
        max_seconds: float | None = None,
        extra_config: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(daemon=True, name=name or f"producer-{topic}")
        self.bootstrap, self.topic, self.rate = bootstrap, topic, rate
        self.count, self.max_seconds = count, max_seconds
        self.extra_config = {"linger.ms": 5, "enable.idempotence": True, **(extra_config or {})}
        self.produced = 0
        self.acked = 0
        self.errors: list[str] = []
        self.ended_by: str | None = None
        self._stop_event = threading.Event()
        self._lock = threading.Lock()

    # -- what a subclass says -------------------------------------------------------------

    def record(self, index: int) -> Record:
        raise NotImplementedError

    def on_acked(self, index: int) -> None:
        """Called (on this thread) for each record the broker acknowledged."""

    # -- control --------------------------------------------------------------------------

    def stop(self) -> None:
        """Produce nothing more; what was produced is still flushed."""
        self._stop_event.set()

    @property
    def ended_early(self) -> bool:
        """Whether something other than the scenario (a cap, an error) ended the producing."""
        return self.ended_by not in (None, "stop")

    def status(self) -> str:
        state = "running" if self.is_alive() else f"ended by {self.ended_by or 'nothing yet'}"
        return (
            f"{self.name}: {state}, {self.produced} produced, {self.acked} acked, "
            f"{len(self.errors)} errors {self.errors[:3]}"
        )

    def wait_ended(self, timeout_s: float) -> None:
        """Wait (bounded) until the producer ended (stopped or capped) and flushed."""
        self.join(timeout_s)
        if self.is_alive():
            raise TimeoutError(
                f"gave up after {timeout_s:g}s waiting for {self.name} to flush and end; "
                f"last saw: {self.status()}"
            )

    def finish(self, timeout_s: float = 180.0) -> None:
        """Stop producing and wait (bounded) until every record produced was answered."""
        self.stop()
        self.wait_ended(timeout_s)

    def wait_acked(self, timeout_s: float) -> None:
        """Wait (bounded) until the producer reached its count cap and flushed; raises unless
        every record was acked."""
        self.wait_ended(timeout_s)
        if self.errors or self.acked != self.produced or self.ended_by != "count cap":
            raise RuntimeError(f"not every record was acked: {self.status()}")

    # -- the loop -------------------------------------------------------------------------

    def _delivered(self, index: int, err: Any, _msg: Any) -> None:
        if err is None:
            with self._lock:
                self.acked += 1
            self.on_acked(index)
        else:
            self.errors.append(str(err))

    def run(self) -> None:
        try:
            self._produce()
        except Exception as exc:  # noqa: BLE001 - kept for the scenario's checks and waits
            self.errors.append(f"producer failed: {type(exc).__name__}: {exc}")
            self.ended_by = f"error: {type(exc).__name__}: {exc}"

    def _produce(self) -> None:
        from confluent_kafka import KafkaError, KafkaException, Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, **self.extra_config})
        began = time.monotonic()
        for i in range(self.count):
            if self._stop_event.is_set():
                self.ended_by = "stop"
                break
            now = time.monotonic()
            if self.max_seconds is not None and now - began > self.max_seconds:
                self.ended_by = "time cap"
                break
            # Pacing only: the rate, not a duration anything waits for.
            ahead = began + i / self.rate - now
            if ahead > 0:
                time.sleep(ahead)
            rec = self.record(i)
            while True:
                try:
                    producer.produce(
                        self.topic,
                        key=rec.key,
                        value=rec.value,
                        # -1: the key picks the partition; 0: stamped with the producer's clock.
                        partition=-1 if rec.partition is None else rec.partition,
                        timestamp=0 if rec.timestamp_ms is None else rec.timestamp_ms,
                        on_delivery=functools.partial(self._delivered, i),
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
        else:
            self.ended_by = "count cap"
        remaining = producer.flush(120)
        if remaining:
            self.errors.append(f"{remaining} records not delivered after a 120 s flush")


class SteadyProducer(PacedProducer):
    """Produces values str(start), str(start + 1), ... at about `rate` records/s, until
    stopped or a cap (`count` records, `max_seconds`) is reached.

    Keyed by the value; each record goes to partition value % (the topic's current partition
    count, re-read every second), so partitions added while it runs get records at once.
    Records carry `timestamp_ms` when given (the producer's clock otherwise).
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        count: int,
        rate: float,
        *,
        start: int = 0,
        max_seconds: float | None = None,
        extra_config: dict[str, Any] | None = None,
        timestamp_ms: int | None = None,
    ) -> None:
        super().__init__(
            bootstrap,
            topic,
            rate,
            count=count,
            max_seconds=max_seconds,
            extra_config=extra_config,
            name=f"steady-producer-{topic}",
        )
        self.start_value = start
        self.timestamp_ms = timestamp_ms
        self.acked_values: list[str] = []
        self._partitions = 0
        self._refreshed = 0.0

    def record(self, index: int) -> Record:
        from confluent_kafka import KafkaException

        now = time.monotonic()
        if self._partitions == 0:
            self._partitions = wait_partition_count(self.bootstrap, self.topic)
            self._refreshed = now
        elif now - self._refreshed > 1.0:
            # Metadata can come back empty or fail while a broker is down: keep the count
            # known so far then.
            try:
                self._partitions = partition_count(self.bootstrap, self.topic) or self._partitions
            except KafkaException:
                pass
            self._refreshed = now
        value = self.start_value + index
        raw = str(value).encode()
        return Record(raw, raw, value % self._partitions, self.timestamp_ms)

    def on_acked(self, index: int) -> None:
        self.acked_values.append(str(self.start_value + index))

    @property
    def values(self) -> list[str]:
        """The values the broker acknowledged: what a reader of the topic must find."""
        return list(self.acked_values)


def read_committed(bootstrap: str, topic: str, timeout_s: float = 120) -> list[bytes]:
    """Every value of `topic` a read_committed consumer sees, up to each partition's EOF.

    Gives up only when nothing new (no record, no partition reaching its end) arrived for
    `timeout_s`: a big topic on a slow machine takes as long as it takes."""
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
    progress = time.monotonic()
    try:
        while len(at_end) < partitions:
            if time.monotonic() - progress > timeout_s:
                raise TimeoutError(
                    f"gave up reading {topic} (read_committed) to the end of its {partitions} "
                    f"partitions: nothing new for {timeout_s:g}s; last saw {len(values)} values, "
                    f"partitions at end {sorted(p for p in at_end if p is not None)}"
                )
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            progress = time.monotonic()
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                continue
            values.append(msg.value() or b"")
    finally:
        consumer.close()
    return values


def produce_all(
    bootstrap: str,
    topic: str,
    *,
    start: int,
    count: int,
    rate: float = 5_000,
    extra_config: dict[str, Any] | None = None,
    timestamp_ms: int | None = None,
) -> SteadyProducer:
    """Produce values str(start) .. str(start + count - 1) now; raises unless all are acked."""
    producer = SteadyProducer(
        bootstrap,
        topic,
        count,
        rate,
        start=start,
        extra_config=extra_config,
        timestamp_ms=timestamp_ms,
    )
    producer.start()
    producer.wait_acked(timeout_s=count / rate + 180)
    return producer


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
    checkpoint: str | Path,
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
) -> LocalJobRef:
    """Start the driver exactly as SubmitStreamingJobOperator does in local mode."""
    from airflow_provider_kafkaspark.lifecycle.errors import JobRunningError
    from airflow_provider_kafkaspark.lifecycle.observe import live_lease
    from kafkaspark_devstack.drivers import driver_ref, submit_local

    lease = live_lease(spec.checkpoint_location)
    if lease is not None:
        raise JobRunningError(f"{spec.checkpoint_location}: a live driver holds the lease")
    raw = submit_local(spec, str(workdir), master=MASTER, restart_policy=restart_policy)
    return driver_ref(raw)


def committed(checkpoint: str | Path) -> int:
    """The last committed batch id, -1 before the first."""
    from airflow_provider_kafkaspark.lifecycle.observe import latest_committed

    try:
        batch = latest_committed(str(checkpoint))
    except Exception:  # noqa: BLE001 - a checkpoint being written for the first time
        return -1
    return -1 if batch is None else batch


def wait_committed_beyond(
    handle: LocalJobRef, checkpoint: str | Path, batch: int, timeout_s: float = 180
) -> int:
    """Wait until a batch after `batch` is committed; the driver must stay alive."""
    from kafkaspark_devstack.drivers import read_log

    def latest() -> int:
        if not pid_alive(handle.pid):
            raise RuntimeError(f"driver {handle.pid} exited:\n{read_log(handle)}")
        return committed(checkpoint)

    try:
        return wait_for(
            f"driver {handle.pid} to commit a batch after {batch} on {checkpoint} "
            "(last committed batch shown)",
            latest,
            timeout_s,
            done=lambda seen: seen > batch,
        )
    except TimeoutError as exc:
        raise TimeoutError(f"{exc}; thread dumps: {dump_stacks(handle)}") from None


def dump_stacks(handle: LocalJobRef) -> str:
    """Ask a stalled driver where it is: SIGUSR1 to its Python processes (the runner writes
    its threads' stacks to the driver log), `jcmd Thread.print` of its JVMs and `py-spy dump`
    of its Python workers (the sink's tasks run there), written next to the log. The parts
    that say where a batch is stuck (the JVM's task threads, the workers' stacks) are also
    printed, so a CI log shows them without the files. Returns where the dumps went."""
    import signal

    from kafkaspark_devstack.process import proc_cmdline

    out = Path(handle.log_file).with_suffix(".threads.txt")
    digest: list[str] = []
    with out.open("w") as dump:
        for pid in _process_tree(handle.pid):
            command = proc_cmdline(pid).replace(b"\0", b" ").decode(errors="replace")
            dump.write(f"== pid {pid}: {command[:300]}\n")
            if "spark.runner" in command:
                os.kill(pid, signal.SIGUSR1)
            elif command.split(" ", 1)[0].endswith("java"):
                threads = _run_quietly(["jcmd", str(pid), "Thread.print"])
                dump.write(threads)
                digest += task_threads(threads)
            elif "pyspark" in command:
                stacks = _run_quietly([_py_spy(), "dump", "--pid", str(pid)])
                dump.write(stacks)
                digest += [f"python worker {pid}:", *stacks.splitlines()[:40]]
    if digest:
        print("\n".join(["stalled driver's task threads and workers:", *digest]), flush=True)
    return f"{out} and {handle.log_file}"


def task_threads(thread_dump: str, frames: int = 14) -> list[str]:
    """The top `frames` lines of each Spark task thread in a `jcmd Thread.print` dump."""
    lines: list[str] = []
    for block in thread_dump.split("\n\n"):
        if block.lstrip().startswith('"Executor task launch worker'):
            lines += block.strip().splitlines()[: frames + 2]
    return lines


def _py_spy() -> str:
    import sys

    return str(Path(sys.executable).with_name("py-spy"))


def _run_quietly(command: list[str]) -> str:
    """What `command` printed (both streams), or why it could not run: a dump must not fail
    the report it is part of."""
    import subprocess

    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{command[0]}: {exc}\n"
    return done.stdout + done.stderr


def _process_tree(root: int) -> list[int]:
    """`root` and its descendants (bounded), from /proc."""
    found: list[int] = []
    queue = [root]
    while queue and len(found) < 200:
        pid = queue.pop()
        found.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                queue += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
    return found


def wait_caught_up(
    handle: LocalJobRef,
    checkpoint: str | Path,
    bootstrap: str,
    topics: list[str],
    timeout_s: float,
) -> None:
    """Wait until the checkpoint's committed offsets reach the end of every partition."""
    from airflow_provider_kafkaspark.core.health.observe import caught_up, end_offsets
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
    from kafkaspark_devstack.drivers import read_log

    with KafkaFacade({"bootstrap.servers": bootstrap}) as kafka:

        def position() -> tuple[bool, str]:
            if not pid_alive(handle.pid):
                raise RuntimeError(f"driver {handle.pid} exited:\n{read_log(handle)}")
            ends = end_offsets(kafka, topics)
            try:
                at = CheckpointReader(str(checkpoint)).position()
            except Exception as exc:  # noqa: BLE001 - not written yet
                return False, f"no readable checkpoint yet ({type(exc).__name__}); ends {ends}"
            return caught_up(at, ends), (
                f"batch {at.latest_committed} committed at {at.committed_offsets}, "
                f"pending {at.pending_batch}; ends {ends}"
            )

        wait_for(
            f"{checkpoint} to catch up with {topics}",
            position,
            timeout_s,
            poll_s=1.0,
            done=lambda seen: seen[0],
        )


def stop(
    handle: LocalJobRef,
    scenario: str,
    exit_timeout_s: float = 120,
    at_batch_boundary: bool = False,
) -> int:
    """Graceful stop as StopStreamingJobOperator does it; returns the last committed batch."""
    from airflow_provider_kafkaspark.lifecycle.stop import stop_job
    from kafkaspark_devstack.drivers import read_log, wait_exit

    report = stop_job(
        handle.checkpoint,
        requested_by=f"reliability:{scenario}",
        reason="scenario step",
        drain_timeout_s=120,
        ref=handle,
        at_batch_boundary=at_batch_boundary,
    )
    if report is None or not report.clean:
        raise RuntimeError(f"driver {handle.pid} did not stop cleanly:\n{read_log(handle)}")
    # The stopped report is written before the process ends: wait for the end itself.
    if wait_exit(handle, exit_timeout_s) is None:
        raise TimeoutError(
            f"gave up after {exit_timeout_s:g}s waiting for driver {handle.pid} to exit after "
            f"its clean stopped report; last saw it alive:\n{read_log(handle)}"
        )
    return report.last_committed_batch if report.last_committed_batch is not None else -1


def kill(handle: LocalJobRef, timeout_s: float = 120) -> None:
    """SIGKILL the driver's whole process group, as a crashed machine would, and wait
    (bounded) until it is gone."""
    from kafkaspark_devstack.drivers import kill_driver

    kill_driver(handle)
    wait_for(
        f"driver {handle.pid} to be gone after SIGKILL (alive?)",
        lambda: pid_alive(handle.pid),
        timeout_s,
        poll_s=0.2,
        done=lambda alive: not alive,
    )
