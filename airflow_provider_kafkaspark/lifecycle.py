"""Lifecycle steps the operators and the CLI share: submit, stop with savepoint, restore.

No Airflow here: operators translate connections and context into these calls and the
results into XCom. Each step observes first (lease, probe, verification, reconciliation),
decides, and only then acts.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import time
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.core.cluster.host_process import holder_gone, reap
from airflow_provider_kafkaspark.core.cluster.job_ref import (
    JobRef,
    LocalJobRef,
    job_ref_from_dict,
    job_ref_to_dict,
)
from airflow_provider_kafkaspark.core.control.folder import ControlFolder, request_stop
from airflow_provider_kafkaspark.core.control.lease import Lease, now_ms
from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.core.control.requests import (
    StopRequest,
    SubmittedMarker,
    ended_before_running,
    start_pending,
    stop_wait_s,
)
from airflow_provider_kafkaspark.core.kafka.offsets import (
    TopicOffsets,
    TopicPartition,
    format_kafka_offsets,
    nest,
    offsets_json,
    total_records,
)
from airflow_provider_kafkaspark.core.kafka.reconcile import (
    ReconcilePolicy,
    Severity,
    build_reconcile_plan,
)
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.core.state.restore import RestoreMode, restore
from airflow_provider_kafkaspark.core.state.savepoint import (
    SavepointManifest,
    SavepointStore,
    StopRecord,
    belongs_to_stop,
    driver_since_stop,
)
from airflow_provider_kafkaspark.errors import (
    InvalidArgumentError,
    KafkaSparkError,
    LeaseHeldError,
    RefusedError,
    SavepointError,
)

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.backends.base import JobBackend, SubmitOptions

log = logging.getLogger(__name__)

IF_RUNNING = ("fail", "skip", "replace")
# Beyond the driver's own drain bound: time to write its report and exit.
STOP_GRACE_S = 30.0


class JobRunningError(LeaseHeldError):
    """A live driver holds the job's checkpoint and the caller asked not to replace it."""


class StopTimeoutError(RefusedError):
    """The driver did not stop within the bound and a forced kill was not allowed."""


class RestoreRefusedError(SavepointError):
    """Verification or reconciliation found something that blocks the restore."""


def live_lease(checkpoint: str) -> Lease | None:
    """The lease of a driver that may still run on `checkpoint`, or None.

    A lease whose holder wrote its stopped report is over (`ControlFolder.live_lease`). A
    fresh lease whose holder ran on this host and is gone (a crash a moment ago) is not
    live either: the next driver takes it over (spark/managed.py), so a restart right after
    a crash need not wait the lease out."""
    lease = ControlFolder(checkpoint).live_lease()
    if lease is None:
        return None
    if holder_gone(lease.host, lease.pid):
        log.info("the lease on %s is held by pid %d, gone from this host", checkpoint, lease.pid)
        return None
    return lease


def latest_committed(checkpoint: str) -> int | None:
    reader = CheckpointReader(checkpoint)
    if not reader.exists():
        return None
    return reader.position().latest_committed


def with_connection(spec: JobSpec, servers: str, kafka_config: dict[str, str]) -> JobSpec:
    """The spec with the connection's servers and client settings (the connection wins)."""
    source = dataclasses.replace(spec.source, bootstrap_servers=servers)
    return dataclasses.replace(spec, source=source, kafka_config={**kafka_config})


def live_first(servers: str, dead: list[str]) -> str:
    """The bootstrap list with the dead entries moved to the end, order kept otherwise:
    clients try the list in order, and an address that times out costs a whole timeout."""
    entries = [s.strip() for s in servers.split(",") if s.strip()]
    return ",".join([s for s in entries if s not in dead] + [s for s in entries if s in dead])


def restore_for_submit(
    spec: JobSpec,
    *,
    savepoint_root: str,
    savepoint_ref: str,
    mode: str,
    kafka_config: dict[str, Any],
    block_on: Severity = Severity.CRITICAL,
    force: bool = False,
) -> tuple[JobSpec, dict[str, Any]]:
    """Verify the savepoint, reconcile its offsets against Kafka, restore it for `spec`.

    The job's checkpoint location is moved aside (kept as a backup) when it is not empty:
    the restored checkpoint takes its place, or, in `offsets`/`latest` mode, the query
    starts on a fresh checkpoint from the savepoint's offsets or the end of each partition.
    """
    from airflow_provider_kafkaspark.core.health.observe import kafka_view
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade

    chosen = RestoreMode.parse(mode)
    store = SavepointStore(savepoint_root)
    summary: dict[str, Any] = {"mode": chosen.value}
    if chosen is not RestoreMode.LATEST:
        manifest = store.resolve(savepoint_ref, spec.job_name)
        store.require_verified(manifest.savepoint_id)
        offsets = {t: {int(p): o for p, o in ps.items()} for t, ps in manifest.offsets.items()}
        with KafkaFacade(kafka_config) as kafka:
            view = kafka_view(kafka, offsets, spec.source.subscribe)
        # The job's own failOnDataLoss decides whether a retention gap blocks, as in Spark.
        policy = ReconcilePolicy(fail_on_data_loss=spec.source.fail_on_data_loss)
        plan = build_reconcile_plan(offsets, view, policy)
        summary.update(savepoint_id=manifest.savepoint_id, reconcile=plan.summary())
        if plan.blocking(block_on) and not force:
            worst = [f for f in plan.findings if f.severity >= block_on][:3]
            raise RestoreRefusedError(
                f"restore of savepoint {manifest.savepoint_id} refused: "
                + "; ".join(f"{f.kind.value} {f.where}: {f.message}" for f in worst)
            )
        ref: str | None = manifest.savepoint_id
    else:
        ref = None
    # Offsets and latest modes need a fresh checkpoint: Spark ignores startingOffsets for
    # an existing one. Checkpoint mode restores into the (moved-aside) location.
    from airflow_provider_kafkaspark.core.state.restore import move_aside
    from airflow_provider_kafkaspark.core.storage.location import open_location

    target = open_location(spec.checkpoint_location)
    if chosen is not RestoreMode.CHECKPOINT and target.has_files():
        summary["backup"] = move_aside(target).url
    result = restore(
        store,
        ref,
        target,
        chosen,
        job_name=spec.job_name,
        move_target_aside=True,
        force=force,
        spark_version=spec.spark_version,
    )
    if result.backup:
        summary["backup"] = result.backup
    if result.new_query_id:
        # A rollback: the batches after the savepoint are written again (core/state/restore).
        summary["new_query_id"] = result.new_query_id
    if chosen is RestoreMode.CHECKPOINT:
        return spec, summary
    source = dataclasses.replace(spec.source, starting_offsets=result.starting_offsets)
    return dataclasses.replace(spec, source=source), summary


def submitted_ref(checkpoint: str) -> JobRef | None:
    """The job reference the checkpoint's last submit recorded, if any."""
    return marker_ref(ControlFolder(checkpoint).read_submitted(), checkpoint)


def marker_ref(marker: SubmittedMarker | None, checkpoint: str) -> JobRef | None:
    """The job reference a submitted marker records (None for markers written before
    references were recorded, or an unreadable one)."""
    if marker is None or marker.job_ref is None:
        return None
    try:
        return job_ref_from_dict(marker.job_ref, f"{checkpoint}: submitted marker")
    except InvalidArgumentError as exc:
        log.warning("ignoring the submitted marker's job reference: %s", exc)
        return None


def starting_driver(checkpoint: str) -> SubmittedMarker | None:
    """The submitted marker of a driver that may still be starting (no lease taken yet)."""
    control = ControlFolder(checkpoint)
    marker = control.read_submitted()
    return marker if _still_starting(control, marker) else None


def _still_starting(control: ControlFolder, marker: SubmittedMarker | None) -> bool:
    if marker is None:
        return False
    gone = marker.pid is not None and holder_gone(marker.host, marker.pid)
    return start_pending(marker, control.read_lease(), control.read_stopped(), now_ms(), gone)


def submit_job(backend: JobBackend, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
    """Start the job's driver through `backend` and return a small, durable handle: the job
    reference (`job_ref`, what stop and health take) and the batch it starts after.

    The caller has observed that no live driver holds the checkpoint's lease."""
    since = latest_committed(spec.checkpoint_location)
    clear_stale_stop_request(ControlFolder(spec.checkpoint_location))
    submitted_at = now_ms()
    submitted = backend.submit(spec, options)
    return record_submit(spec, submitted.ref, submitted.details, options, submitted_at, since)


def clear_stale_stop_request(control: ControlFolder) -> None:
    """Before a driver is started (or handed over) with no live driver on the checkpoint:
    whoever a stop request there was for is gone, and the new driver would stop at once."""
    if control.read_stop_request() is not None:
        log.info("clearing a stop request left by an earlier driver")
        control.clear_stop_request()


def record_submit(
    spec: JobSpec,
    ref: JobRef,
    details: dict[str, Any],
    options: SubmitOptions,
    submitted_at_ms: int,
    since: int | None,
) -> dict[str, Any]:
    """Write the submitted marker for the driver `ref` names and return its handle."""
    control = ControlFolder(spec.checkpoint_location)
    control.write_submitted(
        SubmittedMarker(
            submitted_at_ms=submitted_at_ms,
            job_name=spec.job_name,
            submitted_by=options.submitted_by,
            host=socket.gethostname(),
            pid=ref.pid if isinstance(ref, LocalJobRef) else None,
            log_file=ref.log_file if isinstance(ref, LocalJobRef) else None,
            job_ref=job_ref_to_dict(ref),
        )
    )
    handle: dict[str, Any] = {
        **details,
        "mode": ref.backend,
        "job_name": spec.job_name,
        "checkpoint": spec.checkpoint_location,
        "job_ref": job_ref_to_dict(ref),
        "since_batch": since,
    }
    if isinstance(ref, LocalJobRef):
        # What `pid` is: the supervisor that restarts the driver, or the runner that is the
        # driver (no restart policy). Either way its signals reach the driver.
        role = "supervisor" if options.restart_policy is not None else "driver"
        handle["pid_role"] = role
    return handle


def driver_alive(ref: JobRef | None) -> bool:
    """Whether the driver `ref` names is alive, as its backend sees it. A local driver of
    another host cannot be seen from here: not alive here, the lease decides. Errors of the
    backend (an unreachable ResourceManager, an application of another job) propagate."""
    if ref is None:
        return False
    from airflow_provider_kafkaspark.backends import backend_for

    return backend_for(ref).alive(ref) is True


def local_ref(checkpoint: str, pid: int | None, job_name: str = "") -> LocalJobRef | None:
    """A reference for a driver known only by its pid on this host (older handles, tests)."""
    if not pid:
        return None
    return LocalJobRef(job_name, checkpoint, socket.gethostname(), pid, "", "")


@dataclasses.dataclass(frozen=True)
class StopStarted:
    """A stop request written, and how long its stopper waits for the stopped report: the
    drain bound, the grace to write the report and exit, and what remains of a pending
    driver start."""

    request: StopRequest
    wait_s: float
    # The driver the stop is about: the caller's reference, else the one the checkpoint's
    # last submit recorded; what `check_stop` asks the backend about.
    ref: JobRef | None = None
    # No live lease at the request, only a backend that listed the driver: if it ends
    # without running again, nothing was stopped (`NotRunning`) rather than a crash.
    awaited_restart: bool = False


def begin_stop(
    checkpoint: str,
    *,
    requested_by: str,
    reason: str,
    drain_timeout_s: float,
    ref: JobRef | None = None,
    at_batch_boundary: bool = False,
) -> StopStarted | None:
    """Write a stop request; None when no driver runs or is starting (nothing to stop).
    `at_batch_boundary`: see `core/control/drain` (for a savepoint restored in `checkpoint` mode).

    A driver submitted but not yet holding the lease is waited for: it honours the request
    as soon as its query starts."""
    control = ControlFolder(checkpoint)
    submitted = control.read_submitted()
    ref = ref or marker_ref(submitted, checkpoint)
    lease_live = live_lease(checkpoint) is not None
    backend_alive = not lease_live and driver_alive(ref)
    starting = not (lease_live or backend_alive) and _still_starting(control, submitted)
    wait_s = stop_wait_s(
        drain_timeout_s + STOP_GRACE_S,
        lease_live=lease_live,
        backend_alive=backend_alive,
        marker=submitted,
        starting=starting,
        at_ms=now_ms(),
    )
    if wait_s is None:
        log.info("no live driver on %s: nothing to stop", checkpoint)
        return None
    if backend_alive:
        log.info(
            "%s holds no lease but its backend says it lives: it is starting again and stops "
            "once it runs",
            describe_ref(ref) if ref else "the driver",
        )
    elif starting and submitted is not None:
        log.info(
            "the driver of %s submitted at %d is still starting: it stops once it runs",
            submitted.job_name,
            submitted.submitted_at_ms,
        )
    request = request_stop(
        checkpoint,
        requested_by=requested_by,
        reason=reason,
        drain_timeout_s=drain_timeout_s,
        at_batch_boundary=at_batch_boundary,
    )
    return StopStarted(request, wait_s, ref=ref, awaited_restart=backend_alive)


@dataclasses.dataclass(frozen=True)
class NotRunning:
    """A stop's answer when the driver it waited for ended without running after the
    request (its backend still listed it while it exited): nothing was stopped."""

    reason: str


def check_stop(
    checkpoint: str,
    requested_at_ms: int,
    ref: JobRef | None = None,
    awaited_restart: bool = False,
) -> StoppedReport | NotRunning | None:
    """The stopped report answering a request made at `requested_at_ms`, or None while the
    driver drains or starts; raises when the driver is gone without one. `ref` names the
    driver (`StopStarted.ref`), which its backend is asked about. A driver awaited
    because its backend listed it (`StopStarted.awaited_restart`) that ended without running
    after the request is `NotRunning`. The report is written before the lease is released,
    so the checkpoint is free once it is there."""
    control = ControlFolder(checkpoint)
    stopped = control.read_stopped()
    if stopped is not None and stopped.stopped_at_ms >= requested_at_ms:
        _wait_gone(ref, 30)
        return stopped
    if live_lease(checkpoint) is None and not driver_alive(ref) and not starting_driver(checkpoint):
        # The driver writes its report before it drops the lease: with the lease gone, a report
        # written since the first read is there now.
        stopped = control.read_stopped()
        if stopped is not None and stopped.stopped_at_ms >= requested_at_ms:
            return stopped
        if awaited_restart and ended_before_running(control.read_lease(), requested_at_ms):
            log.info("the driver of %s ended without running again: nothing to stop", checkpoint)
            return NotRunning("the driver ended without running after the stop request")
        raise StopTimeoutError(
            f"{checkpoint}: the driver exited without a stopped report" + _log_hint(checkpoint)
        )
    return None


def _log_hint(checkpoint: str) -> str:
    marker = ControlFolder(checkpoint).read_submitted()
    return f" (driver log: {marker.log_file})" if marker and marker.log_file else ""


def force_stop(checkpoint: str, drain_timeout_s: float, ref: JobRef | None, allowed: bool) -> None:
    """After the drain bound: kill the driver `ref` names through its backend if allowed
    (a local process group on its own host, a YARN application), else refuse."""
    from airflow_provider_kafkaspark.backends import kill_driver

    if not (allowed and ref is not None):
        raise StopTimeoutError(
            f"{checkpoint}: the driver did not stop within {drain_timeout_s:g}s and a forced "
            f"kill is "
            + ("not allowed" if not allowed else "impossible: no job reference names the driver")
        )
    log.warning("driver of %s did not stop in time: killing %s", checkpoint, describe_ref(ref))
    kill_driver(ref)
    _wait_gone(ref, 30)


def describe_ref(ref: JobRef) -> str:
    if isinstance(ref, LocalJobRef):
        return f"{ref.backend} driver pid {ref.pid} on {ref.host}"
    return f"YARN application {ref.application_id} at {ref.resource_manager}"


def stop_job(
    checkpoint: str,
    *,
    requested_by: str,
    reason: str,
    drain_timeout_s: float,
    ref: JobRef | None = None,
    pid: int | None = None,
    allow_force_kill: bool = False,
    poll_s: float = 1.0,
    at_batch_boundary: bool = False,
) -> StoppedReport | None:
    """Ask the driver to stop and wait for its stopped report; kill it only if allowed.
    The driver is named by `ref`, or by `pid` for a process of this host.

    Returns None when no driver was running or it had to be killed; when none runs because
    `requested_by` already stopped it (a retried stop), that stop's report
    (`finished_stop`)."""
    ref = ref or local_ref(checkpoint, pid)
    started = begin_stop(
        checkpoint,
        requested_by=requested_by,
        reason=reason,
        drain_timeout_s=drain_timeout_s,
        ref=ref,
        at_batch_boundary=at_batch_boundary,
    )
    if started is None:
        return finished_stop(checkpoint, requested_by)
    deadline = time.monotonic() + started.wait_s
    while time.monotonic() < deadline:
        stopped = check_stop(
            checkpoint, started.request.requested_at_ms, started.ref, started.awaited_restart
        )
        if isinstance(stopped, NotRunning):
            return None
        if stopped is not None:
            return stopped
        time.sleep(poll_s)
    force_stop(checkpoint, drain_timeout_s, ref, allow_force_kill)
    return None


def answers_request(stopped: StoppedReport, requested_by: str) -> bool:
    """Whether the driver wrote `stopped` in answer to a stop request by `requested_by`: the
    report names the request; a driver of an earlier release named its author only in the
    reason (spark/managed.py)."""
    if stopped.requested_by is not None:
        return stopped.requested_by == requested_by
    return stopped.reason.startswith(f"stop request by {requested_by}: ")


def finished_stop(checkpoint: str, requested_by: str) -> StoppedReport | None:
    """The stopped report of a stop `requested_by` already saw through, while no driver
    has run since: what a retried stop reports instead of "nothing was running"."""
    control = ControlFolder(checkpoint)
    stopped = control.read_stopped()
    if stopped is None or not answers_request(stopped, requested_by):
        return None
    if driver_since_stop(stopped, control.read_lease(), control.read_submitted()):
        return None
    log.info("%s: already stopped by %s: %s", checkpoint, requested_by, stopped.describe())
    return stopped


def savepoint_after_stop(
    checkpoint: str, savepoint_root: str, job_name: str, *, spark_version: str | None
) -> SavepointManifest:
    """A savepoint of the stopped job's checkpoint. It records the Spark version of the
    driver that wrote the checkpoint, from its stopped report; `spark_version` only when the
    report does not say (a driver of an earlier release): the Airflow side's pyspark may be
    another version than the cluster's.

    The savepoint records the stopped report it follows. When a savepoint of this very stop
    exists already (a retried task, a trigger that took it: `core/state/savepoint.belongs_to_stop`),
    that one is returned: a second copy of the same batch would only be found by `latest`
    and announced twice."""
    control = ControlFolder(checkpoint)
    stopped = control.read_stopped()
    store = SavepointStore(savepoint_root)
    after_stop: StopRecord | None = None
    if stopped is not None:
        if stopped.spark_version:
            spark_version = stopped.spark_version
        lease, marker = control.read_lease(), control.read_submitted()
        if not driver_since_stop(stopped, lease, marker):
            taken = store.taken_at_batch(job_name, stopped.last_committed_batch)
            if taken:
                position = CheckpointReader(checkpoint).position()
                for manifest in taken:
                    if belongs_to_stop(manifest, stopped, position, lease=lease, marker=marker):
                        log.info(
                            "savepoint %s was taken after this stop already",
                            manifest.savepoint_id,
                        )
                        return manifest
            after_stop = StopRecord.of(stopped)
    return store.create(
        checkpoint, job_name=job_name, spark_version=spark_version, after_stop=after_stop
    )


def _wait_gone(ref: JobRef | None, timeout_s: float) -> None:
    """Bounded wait for the driver's end (a local child is reaped on the way)."""
    deadline = time.monotonic() + timeout_s
    while driver_alive(ref) and time.monotonic() < deadline:
        if isinstance(ref, LocalJobRef) and ref.host == socket.gethostname():
            reap(ref.pid)
        time.sleep(0.2)


class BackfillError(KafkaSparkError):
    """The bounded batch run failed."""


def backfill_offsets(
    kafka_config: dict[str, Any], topics: tuple[str, ...], start_ms: int, end_ms: int
) -> tuple[TopicOffsets, TopicOffsets]:
    """Per-partition [start, end) offsets of a time range (end exclusive)."""
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade

    with KafkaFacade(kafka_config) as kafka:
        counts = kafka.topic_partitions(topics)
        partitions = [TopicPartition(t, p) for t, n in counts.items() for p in range(n)]
        starts = kafka.offsets_for_times(dict.fromkeys(partitions, start_ms))
        ends = kafka.offsets_for_times(dict.fromkeys(partitions, end_ms))
    return nest(starts.items()), nest(ends.items())


def run_backfill(
    spec: JobSpec,
    *,
    kafka_config: dict[str, Any],
    start_ms: int,
    end_ms: int,
    output_root: str,
    master: str,
    timeout_s: float,
) -> dict[str, Any]:
    """Run `spark/backfill.py` over the offsets of [start_ms, end_ms); blocks until done."""
    import json
    import subprocess
    import tempfile

    from airflow_provider_kafkaspark.backends.local_driver import (
        driver_environment,
        driver_python,
        write_spec_file,
    )
    from airflow_provider_kafkaspark.spark.local_session import python_env

    if not spec.source.subscribe:
        raise BackfillError("backfill needs a job whose source names its topics (subscribe)")
    starting, ending = backfill_offsets(kafka_config, spec.source.subscribe, start_ms, end_ms)
    output = f"{output_root.rstrip('/')}/interval={start_ms}-{end_ms}"
    with tempfile.TemporaryDirectory(prefix="kafkaspark-backfill-") as tmp:
        spec_file = write_spec_file(spec, tmp)
        python = driver_python(spec.spark_conf)
        proc = subprocess.run(
            [
                python,
                "-m",
                "airflow_provider_kafkaspark.spark.backfill",
                "--spec",
                str(spec_file),
                "--master",
                master,
                "--output",
                output,
                "--starting-offsets",
                format_kafka_offsets(starting),
                "--ending-offsets",
                format_kafka_offsets(ending),
            ],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env={**driver_environment(), **python_env(master, python)},
        )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise BackfillError(f"backfill of {output} failed (exit {proc.returncode}):\n{tail}")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "start_ms": start_ms,
        "end_ms": end_ms,
        "starting_offsets": offsets_json(starting),
        "ending_offsets": offsets_json(ending),
        "records": total_records(starting, ending),
        "rows": int(summary["rows"]),
        "output": output,
    }
