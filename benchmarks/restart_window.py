"""Restart-window downtime: a stop with a savepoint, its restore and a warm handover, against
a plain crash and resubmit from the checkpoint.

Both paths run the same stateless passthrough job (`reliability.stack.passthrough_spec`) with
the same exactly-once sink (`kafka_exactly_once`), in real drivers started as the Airflow
operators start them, against a real local Kafka, while a `SteadyProducer` feeds the input at
`rate` records/s all along:

- `savepoint`: a standby driver for the job is submitted (`handover.submit_standby`) and warms
  up while the old driver runs (with `handover="cold"`: none). Then the stop request
  (`begin_stop`, t_request), the drain (`check_stop` until the stopped report and the driver's
  exit), `savepoint_after_stop`, `restore_for_submit` in `checkpoint` mode (verification,
  reconciliation against Kafka, copy into the checkpoint location), and `hand_over` to the
  standby (cold: a submit).
- `plain`: SIGKILL of the driver's process group, sent once part of a planned, uncommitted
  batch is in the output topic, then an immediate resubmit on the same checkpoint.

Downtime = last commit of the old driver -> first commit of the new one: the modification
times of the last `commits/<id>` file the old driver wrote and of the first one the new
driver writes past it. Each round runs both paths, on their own topics and checkpoints, in
alternating order. Once the new driver ran a few batches, the producer stops, the job catches
up, and a read_committed reader counts the output against the produced values (duplicates,
missing).

The savepoint path's phases, from the last commit: `to_stopped_report` (the driver's stop
after its last batch), `exit` (report to process gone, as `check_stop` sees it), `savepoint`,
`restore`, `handover` (or `submit`), `start_to_first_batch` (handover returned to the first
commit), the latter split at the driver's "query ... started" log line into `query_start`
and `first_batch`. Besides, from the stop request: `drain` (request to stopped report) and
`batches_after_request` (batches the old driver committed after the request: the stop waits
for a moment with no batch in flight). The plain path's phases: `to_kill` (last commit to
the kill), `kill`, `submit`, and `start_to_first_batch` split the same way. `verify_s` is one
extra `SavepointStore.verify` of each savepoint, timed off the clock. `batch_ms_*` are the
batch durations (trigger to end) the drivers wrote to progress.json.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    # run.py puts only benchmarks/ on the path; the reliability helpers live in the root.
    sys.path.insert(0, str(ROOT))

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive  # noqa: E402
from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef  # noqa: E402
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec  # noqa: E402
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader  # noqa: E402
from reliability import stack  # noqa: E402

GOAL_RATIO = 1.0
# And at most one trigger interval plus this many seconds, as a median.
GOAL_ABOVE_TRIGGER_S = 3.0
SINK = "kafka_exactly_once"
DRAIN_TIMEOUT_S = 120.0
_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) \w+ kafkaspark\.\w+: (.*)$")


# -- checkpoint and log observation ---------------------------------------------------------


def _batch_ids(checkpoint: Path, folder: str) -> list[int]:
    # Listing the folder directly: this is polled every few milliseconds while timing.
    try:
        names = os.listdir(checkpoint / folder)
    except FileNotFoundError:
        return []
    return sorted(int(n) for n in names if n.isdigit())


def _last(ids: list[int]) -> int:
    return ids[-1] if ids else -1


def _wait_first_commit(
    handle: LocalJobRef, checkpoint: Path, after: int, timeout_s: float, poll_s: float
) -> tuple[int, float]:
    """The first batch committed past `after` and when its commit file was written (epoch s).

    The file's mtime, not the moment the poll saw it, so the poll interval adds nothing."""
    from kafkaspark_devstack.drivers import read_log

    deadline = time.monotonic() + timeout_s
    while True:
        newer = [b for b in _batch_ids(checkpoint, "commits") if b > after]
        if newer:
            return newer[0], (checkpoint / "commits" / str(newer[0])).stat().st_mtime
        if not pid_alive(handle.pid):
            raise RuntimeError(f"driver {handle.pid} exited:\n{read_log(handle)}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no batch after {after} on {checkpoint} in {timeout_s:g}s")
        time.sleep(poll_s)


def _logged_at(handle: LocalJobRef, message: str, not_before: float) -> float | None:
    """When the driver first logged a line starting with `message` (epoch s), not before
    `not_before`. The log's timestamps are local time, in milliseconds, of this machine."""
    try:
        lines = Path(handle.log_file).read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        match = _LOG_LINE.match(line)
        if match is None or not match.group(3).startswith(message):
            continue
        stamp = dt.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S")
        at = stamp.timestamp() + int(match.group(2)) / 1000
        if at >= not_before - 0.001:  # the log truncates to whole milliseconds
            return at
    return None


def _start_split(handle: LocalJobRef, released: float, t1: float) -> dict[str, float | None]:
    started = _logged_at(handle, "query ", released)
    return {
        "query_start": None if started is None else started - released,
        "first_batch": None if started is None else t1 - started,
    }


def _batch_ms(checkpoint: str) -> list[int]:
    """Durations of the last batches the driver reported in progress.json (trigger to end)."""
    from airflow_provider_kafkaspark.core.control.folder import ControlFolder

    progress = ControlFolder(checkpoint).read_progress()
    if progress is None:
        return []
    return [b.duration_ms.get("triggerExecution", 0) for b in progress.batches]


# -- Kafka ----------------------------------------------------------------------------------


def _records_in(consumer: Any, topic: str, partitions: int) -> int:
    from confluent_kafka import TopicPartition

    return sum(
        consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
        for p in range(partitions)
    )


def _count(bootstrap: str, topic: str, produced: list[str]) -> stack.OnceCount:
    found = [v.decode() for v in stack.read_committed(bootstrap, topic, timeout_s=300)]
    return stack.OnceCount.of(produced, found)


# -- the two paths ----------------------------------------------------------------------------


@dataclasses.dataclass
class PathRun:
    downtime_s: float
    phases_s: dict[str, float | None]
    count: stack.OnceCount
    extra: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "downtime_s": round(self.downtime_s, 3),
            "phases_s": {k: None if v is None else round(v, 3) for k, v in self.phases_s.items()},
            "duplicates": self.count.duplicates,
            "missing": self.count.missing,
            "unexpected": self.count.unexpected,
            "records_checked": self.count.checked,
            **self.extra,
        }


@dataclasses.dataclass(frozen=True)
class Setup:
    bootstrap: str
    base: Path
    rate: float
    partitions: int
    warm_batches: int
    after_batches: int
    poll_s: float
    timeout_s: float
    keep_logs: Path | None
    trigger: str
    handover: str


class Round:
    """One path's job: its topics, checkpoint, producer and drivers (all killed at the end)."""

    def __init__(self, setup: Setup, name: str) -> None:
        self.setup = setup
        self.name = name
        self.source, self.sink = f"{name}-in", f"{name}-out"
        self.checkpoint = setup.base / name / "checkpoint"
        self.workdir = setup.base / name / "work"
        spec = stack.passthrough_spec(
            bootstrap=setup.bootstrap,
            checkpoint=self.checkpoint,
            source=self.source,
            sink=self.sink,
            job_name=name,
            trigger_interval=setup.trigger,
        )
        self.spec = dataclasses.replace(spec, sink=dataclasses.replace(spec.sink, kind=SINK))
        self.handles: list[LocalJobRef] = []
        stack.create_topics(
            setup.bootstrap, {self.source: setup.partitions, self.sink: setup.partitions}
        )
        # Enough values for any run; the producer is stopped long before it runs out.
        self.producer = stack.SteadyProducer(
            setup.bootstrap, self.source, count=int(setup.rate * 7200), rate=setup.rate
        )

    def start(self) -> LocalJobRef:
        self.producer.start()
        handle = stack.submit(self.spec, self.workdir)
        self.handles.append(handle)
        stack.wait_committed_beyond(
            handle, self.checkpoint, self.setup.warm_batches - 1, self.setup.timeout_s
        )
        return handle

    def first_commit(self, handle: LocalJobRef, after: int) -> tuple[int, float]:
        return _wait_first_commit(
            handle, self.checkpoint, after, self.setup.timeout_s, self.setup.poll_s
        )

    def finish(self, handle: LocalJobRef, first_batch: int) -> stack.OnceCount:
        """Let the new driver run a few batches, stop the input, catch up, count the output."""
        stack.wait_committed_beyond(
            handle,
            self.checkpoint,
            first_batch + self.setup.after_batches - 1,
            self.setup.timeout_s,
        )
        self.producer.stop()
        self.producer.join(180)
        if self.producer.errors or self.producer.acked != self.producer.produced:
            raise RuntimeError(
                f"{self.source}: {self.producer.acked}/{self.producer.produced} acked, "
                f"errors {self.producer.errors[:3]}"
            )
        stack.wait_caught_up(
            handle, self.checkpoint, self.setup.bootstrap, [self.source], self.setup.timeout_s
        )
        return _count(self.setup.bootstrap, self.sink, self.producer.values)

    def close(self) -> None:
        self.producer.stop()
        for handle in self.handles:
            if pid_alive(handle.pid):
                stack.kill(handle)
        if self.setup.keep_logs is not None:
            self.setup.keep_logs.mkdir(parents=True, exist_ok=True)
            for handle in self.handles:
                log = Path(handle.log_file)
                if log.exists():
                    shutil.copy(log, self.setup.keep_logs / log.name)


def _wait_logged(handle: LocalJobRef, message: str, since: float, timeout_s: float) -> float:
    from kafkaspark_devstack.drivers import read_log

    deadline = time.monotonic() + timeout_s
    while (at := _logged_at(handle, message, since)) is None:
        if not pid_alive(handle.pid):
            raise RuntimeError(f"driver {handle.pid} exited:\n{read_log(handle)}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"driver {handle.pid} never logged {message!r}")
        time.sleep(0.2)
    return at


def _savepoint_path(setup: Setup, name: str) -> PathRun:
    from airflow_provider_kafkaspark.backends.base import SubmitOptions
    from airflow_provider_kafkaspark.backends.local import LocalBackend
    from airflow_provider_kafkaspark.core.control.reports import StoppedReport
    from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore
    from airflow_provider_kafkaspark.lifecycle.handover import hand_over, submit_standby
    from airflow_provider_kafkaspark.lifecycle.restore import restore_for_submit
    from airflow_provider_kafkaspark.lifecycle.stop import (
        begin_stop,
        check_stop,
        savepoint_after_stop,
    )
    from airflow_provider_kafkaspark.versions import SPARK_VERSION
    from kafkaspark_devstack.drivers import driver_ref, wait_exit

    job = Round(setup, name)
    savepoints = str(setup.base / name / "savepoints")
    options = SubmitOptions(workdir=str(job.workdir), submitted_by="benchmark:restart_window")
    try:
        handle = job.start()
        standby: dict[str, Any] | None = None
        warm_s: float | None = None
        if setup.handover == "warm":
            began = time.time()
            standby = submit_standby(LocalBackend(stack.MASTER), job.spec, options)
            standby_handle = driver_ref(standby)
            job.handles.append(standby_handle)
            warm_s = _wait_logged(standby_handle, "standby ready", began, setup.timeout_s) - began
        request_batch = _last(_batch_ids(job.checkpoint, "commits"))
        t_request = time.time()
        started = begin_stop(
            str(job.checkpoint),
            requested_by="benchmark:restart_window",
            reason="restart window",
            drain_timeout_s=DRAIN_TIMEOUT_S,
            ref=handle,
            at_batch_boundary=True,  # as the restart-window DAG: a checkpoint-mode restore
        )
        if started is None:
            raise RuntimeError(f"{name}: no live driver to stop")
        deadline = time.monotonic() + started.wait_s
        cp = str(job.checkpoint)
        while (stopped := check_stop(cp, started.request.requested_at_ms, handle)) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: driver {handle.pid} did not stop")
            time.sleep(setup.poll_s)
        if not isinstance(stopped, StoppedReport):
            raise RuntimeError(f"{name}: the driver ended before the stop reached it")
        gone = time.time()
        wait_exit(handle, 60)  # reaps our child; check_stop already saw it gone
        last = -1 if stopped.last_committed_batch is None else stopped.last_committed_batch
        # Before the restore moves the checkpoint aside: when the last batch ended.
        t0 = (job.checkpoint / "commits" / str(last)).stat().st_mtime
        manifest = savepoint_after_stop(
            str(job.checkpoint), savepoints, name, spark_version=SPARK_VERSION
        )
        saved = time.time()
        spec, summary = restore_for_submit(
            job.spec,
            savepoint_root=savepoints,
            savepoint_ref=manifest.savepoint_id,
            mode="checkpoint",
            kafka_config={"bootstrap.servers": setup.bootstrap},
        )
        restored = time.time()
        if standby is not None:
            if hand_over(spec, standby, options) is None:
                raise RuntimeError(f"{name}: the standby was gone at the handover")
            new = job.handles[-1]
        else:
            new = stack.submit(spec, job.workdir)
            job.handles.append(new)
        released = time.time()
        batch, t1 = job.first_commit(new, last)
        stopped_at = stopped.stopped_at_ms / 1000
        phases: dict[str, float | None] = {
            "to_stopped_report": stopped_at - t0,
            "exit": gone - stopped_at,
            "savepoint": saved - gone,
            "restore": restored - saved,
            "handover" if standby is not None else "submit": released - restored,
            "start_to_first_batch": t1 - released,
            **_start_split(new, released, t1),
        }
        count = job.finish(new, batch)
        verify_began = time.perf_counter()
        verified = SavepointStore(savepoints).verify(manifest.savepoint_id)
        verify_s = time.perf_counter() - verify_began
        return PathRun(
            t1 - t0,
            phases,
            count,
            {
                "handover": setup.handover,
                "standby_warm_up_s": None if warm_s is None else round(warm_s, 3),
                "drain_s": round(stopped_at - t_request, 3),
                "stopped_clean": stopped.clean,
                "stopped_message": stopped.message,
                "last_committed_at_stop": last,
                "batches_after_request": last - request_batch,
                "batch_ms_before_stop": _batch_ms(summary["backup"]) if "backup" in summary else [],
                "batch_ms_after_restart": _batch_ms(str(job.checkpoint)),
                "first_batch_after": batch,
                "savepoint_files": len(manifest.files),
                "savepoint_bytes": manifest.total_bytes,
                "verify_s": round(verify_s, 3),
                "verify_ok": verified.ok,
            },
        )
    finally:
        job.close()


def _kill_mid_write(job: Round, handle: LocalJobRef) -> tuple[int, float, float, int]:
    """SIGKILL the driver once a planned, uncommitted batch is being written to the output.

    The sink writes while the batch's commit file is missing, so a batch whose output's end
    offset grew past what the batches before it wrote is being written right now (the
    exactly-once sink's transaction markers count too). Returns the batch, when it was killed,
    when the process was gone, and the offsets the output grew by."""
    from confluent_kafka import Consumer

    setup = job.setup
    reader = CheckpointReader(str(job.checkpoint))
    consumer = Consumer({"bootstrap.servers": setup.bootstrap, "group.id": f"{job.name}-watch"})
    before: dict[int, int] = {}
    deadline = time.monotonic() + setup.timeout_s
    try:
        while time.monotonic() < deadline:
            committed = _last(_batch_ids(job.checkpoint, "commits"))
            planned = _last(_batch_ids(job.checkpoint, "offsets"))
            if planned == committed + 1 and planned >= 1:
                if planned - 1 not in before:
                    # The input starts at offset 0 and the job at `earliest` without any
                    # replay yet: the end offsets of batch N-1 count what batches 0..N-1 wrote.
                    offsets = reader.offset_entry(planned - 1).kafka_offsets()
                    before[planned - 1] = sum(offsets.get(job.source, {}).values())
                written = _records_in(consumer, job.sink, setup.partitions) - before[planned - 1]
                if written > 0 and not (job.checkpoint / "commits" / str(planned)).exists():
                    t0 = time.time()
                    stack.kill(handle)
                    return planned, t0, time.time(), written
            time.sleep(0.002)
    finally:
        consumer.close()
    raise TimeoutError(f"{job.name}: never caught a batch being written")


def _resubmit(spec: JobSpec, workdir: Path) -> LocalJobRef:
    """Start a new driver at once on a crashed driver's checkpoint.

    `stack.submit` (like the submit operator with if_running='fail') refuses while the
    killed driver's lease is fresh, up to `lease_ttl_s`; the new driver itself takes the
    lease over at once when its holder is a gone process of this host."""
    from kafkaspark_devstack.drivers import driver_ref, submit_local

    raw = submit_local(spec, str(workdir), master=stack.MASTER, restart_policy=None)
    return driver_ref(raw)


def _plain_path(setup: Setup, name: str) -> PathRun:
    job = Round(setup, name)
    try:
        handle = job.start()
        batch, killed_at, gone, in_flight = _kill_mid_write(job, handle)
        committed = _last(_batch_ids(job.checkpoint, "commits"))
        t0 = (job.checkpoint / "commits" / str(committed)).stat().st_mtime
        new = _resubmit(job.spec, job.workdir)
        job.handles.append(new)
        submitted = time.time()
        first, t1 = job.first_commit(new, committed)
        phases: dict[str, float | None] = {
            "to_kill": killed_at - t0,
            "kill": gone - killed_at,
            "submit": submitted - gone,
            "start_to_first_batch": t1 - submitted,
            **_start_split(new, submitted, t1),
        }
        count = job.finish(new, first)
        return PathRun(
            t1 - t0,
            phases,
            count,
            {
                "killed_batch": batch,
                "killed_mid_batch": committed < batch,
                "batch_records_in_output_at_kill": in_flight,
                "first_batch_after": first,
                "batch_ms_after_restart": _batch_ms(str(job.checkpoint)),
            },
        )
    finally:
        job.close()


# -- figures ------------------------------------------------------------------------------


def median_s(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def median_phases(runs: list[PathRun]) -> dict[str, float | None]:
    medians: dict[str, float | None] = {}
    for phase in runs[0].phases_s:
        values = [v for r in runs if (v := r.phases_s.get(phase)) is not None]
        medians[phase] = median_s(values) if values else None
    return medians


def summarize(runs: list[PathRun]) -> dict[str, Any]:
    return {
        "downtime_s": [round(r.downtime_s, 3) for r in runs],
        "median_downtime_s": median_s([r.downtime_s for r in runs]),
        "median_phases_s": median_phases(runs),
        "duplicates": [r.count.duplicates for r in runs],
        "missing": [r.count.missing for r in runs],
        "runs": [r.to_dict() for r in runs],
    }


def run(
    rounds: int = 5,
    rate: float = 200.0,
    partitions: int = 3,
    warm_batches: int = 3,
    after_batches: int = 3,
    poll_s: float = 0.05,
    timeout_s: float = 600.0,
    keep_logs: str = "",
    trigger: str = "5 seconds",
    handover: str = "warm",
) -> dict[str, Any]:
    """`keep_logs`: a folder to copy the drivers' logs to (default: none kept).

    `trigger`: the job's trigger interval (5 s is the job spec's default). `handover`:
    `warm` (a standby driver takes over, the restart window's default) or `cold` (the
    restore submits a new driver)."""
    from kafkaspark_devstack.kafka import LocalKafkaCluster

    if rounds < 1:
        raise ValueError(f"rounds must be 1 or more, got {rounds}")
    if handover not in ("warm", "cold"):
        raise ValueError(f"handover must be 'warm' or 'cold', got {handover!r}")
    with tempfile.TemporaryDirectory(prefix="kafkaspark-bench-restart-") as tmp:
        base = Path(tmp)
        with LocalKafkaCluster(base / "kafka") as cluster:
            setup = Setup(
                bootstrap=cluster.bootstrap_servers,
                base=base,
                rate=rate,
                partitions=partitions,
                warm_batches=warm_batches,
                after_batches=after_batches,
                poll_s=poll_s,
                timeout_s=timeout_s,
                keep_logs=Path(keep_logs) if keep_logs else None,
                trigger=trigger,
                handover=handover,
            )
            runs, order = alternate(
                "restart_window",
                rounds,
                {
                    "savepoint": lambda i: _savepoint_path(setup, f"rw-savepoint-{i}"),
                    "plain": lambda i: _plain_path(setup, f"rw-plain-{i}"),
                },
            )
            savepoint, plain = runs["savepoint"], runs["plain"]

    savepoint_median = median_s([r.downtime_s for r in savepoint])
    ratio = savepoint_median / median_s([r.downtime_s for r in plain])
    bound_s = _interval_s(trigger) + GOAL_ABOVE_TRIGGER_S
    return {
        "rounds": rounds,
        "order": order,
        "rate_per_s": rate,
        "partitions": partitions,
        "trigger_interval": trigger,
        "savepoint": {"sink": SINK, "handover": handover, **summarize(savepoint)},
        "plain": {"sink": SINK, **summarize(plain)},
        "ratio_savepoint_to_plain": round(ratio, 3),
        "goal_ratio": GOAL_RATIO,
        "goal_ratio_met": ratio <= GOAL_RATIO,
        "goal_absolute_s": bound_s,
        "goal_absolute_met": savepoint_median <= bound_s,
        "savepoint_duplicates_total": sum(r.count.duplicates for r in savepoint),
        "plain_duplicates_total": sum(r.count.duplicates for r in plain),
        "missing_total": sum(r.count.missing for r in savepoint + plain),
    }


def alternate(
    benchmark: str, rounds: int, paths: dict[str, Callable[[int], PathRun]]
) -> tuple[dict[str, list[PathRun]], list[list[str]]]:
    """Run every path once a round, in the given order in even rounds and reversed in odd
    ones (which path goes first spreads drift in the machine's load); returns each path's
    runs and the order of each round."""
    runs: dict[str, list[PathRun]] = {name: [] for name in paths}
    order: list[list[str]] = []
    for i in range(rounds):
        names = list(paths) if i % 2 == 0 else list(reversed(paths))
        order.append(names)
        for name in names:
            stack.log(benchmark, f"round {i}: {name} path")
            runs[name].append(paths[name](i))
            stack.log(benchmark, f"round {i}: {name}: {runs[name][-1].to_dict()}")
    return runs, order


def _interval_s(trigger: str) -> float:
    """Seconds of a processing-time trigger such as '5 seconds' (0 for availableNow)."""
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(second|minute)", trigger)
    if match is None:
        return 0.0
    return float(match.group(1)) * (60 if match.group(2) == "minute" else 1)
