"""Stop: ask the driver to stop through its checkpoint's control folder, wait for its stopped
report within a bound, kill it after the bound only if allowed; then a savepoint of the
stopped checkpoint.

The wait is one loop for the stop operator, its deferrable trigger and the CLI: each poll
observes the facts (`observe_stop`: the report answering the request, whether a driver is
still there) and decides over them (`decide_stop`, pure); `poll_stop` does both, and
`wait_for_stop` repeats it with a sleep (the trigger repeats it with its own async sleep)."""

from __future__ import annotations

import dataclasses
import enum
import logging
import time
from collections.abc import Callable

from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef
from airflow_provider_kafkaspark.core.control.folder import ControlFolder, request_stop
from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.core.control.requests import (
    StopRequest,
    ended_before_running,
    reported_after_request,
    stop_wait_s,
)
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.core.state.savepoint import (
    SavepointManifest,
    SavepointStore,
    StopRecord,
    belongs_to_stop,
    driver_since_stop,
)
from airflow_provider_kafkaspark.lifecycle.errors import StopTimeoutError
from airflow_provider_kafkaspark.lifecycle.observe import (
    describe_ref,
    driver_alive,
    live_lease,
    local_ref,
    marker_ref,
    starting_driver,
    still_starting,
    wait_gone,
)

log = logging.getLogger(__name__)

# Beyond the driver's own drain bound: time to write its report and exit.
STOP_GRACE_S = 30.0


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
    starting = not (lease_live or backend_alive) and still_starting(control, submitted)
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


class StopOutcome(enum.Enum):
    """What one poll of a stop decides."""

    STOPPED = "stopped"  # the driver answered the request with its report
    WAIT = "wait"  # it drains or starts: poll again
    TIMEOUT = "timeout"  # the bound passed with the driver still there: force or refuse
    NOT_RUNNING = "not_running"  # awaited only because its backend listed it; it never ran
    GONE = "gone"  # it ended without a report answering the request


@dataclasses.dataclass(frozen=True)
class StopObservation:
    """The facts one poll of a stop reads. `report`: the stopped report answering the
    request, if written. `driver_present`: a live lease, a backend that lists the driver or
    a start still pending. `ended_before_running`: the driver took no lease since the
    request. `log_file`: where the driver's log is, for the message when it is gone."""

    report: StoppedReport | None
    driver_present: bool
    ended_before_running: bool = False
    log_file: str | None = None


@dataclasses.dataclass(frozen=True)
class StopStep:
    """A poll's decision, with the report (`STOPPED`) or why (`GONE`, `NOT_RUNNING`, ...)."""

    outcome: StopOutcome
    report: StoppedReport | None = None
    reason: str = ""


def decide_stop(
    observed: StopObservation, *, checkpoint: str, awaited_restart: bool, bound_passed: bool
) -> StopStep:
    """The decision of one poll over what it observed. A report wins over the bound: the
    driver stopped, however late. A driver gone without one stopped nothing when it was
    awaited only because its backend listed it and never ran again, else it crashed."""
    if observed.report is not None:
        return StopStep(StopOutcome.STOPPED, observed.report, observed.report.reason)
    if observed.driver_present:
        if bound_passed:
            return StopStep(StopOutcome.TIMEOUT, reason="drain bound passed")
        return StopStep(StopOutcome.WAIT)
    if awaited_restart and observed.ended_before_running:
        log.info("the driver of %s ended without running again: nothing to stop", checkpoint)
        return StopStep(
            StopOutcome.NOT_RUNNING,
            reason="the driver ended without running after the stop request",
        )
    hint = f" (driver log: {observed.log_file})" if observed.log_file else ""
    return StopStep(
        StopOutcome.GONE, reason=f"{checkpoint}: the driver exited without a stopped report{hint}"
    )


def observe_stop(checkpoint: str, requested_at_ms: int, ref: JobRef | None) -> StopObservation:
    """Read what `decide_stop` decides over. The report is read again once no driver is
    there: the driver writes it before it drops the lease, so with the lease gone a report
    written since the first read is there now."""
    control = ControlFolder(checkpoint)

    def answering() -> StoppedReport | None:
        stopped = control.read_stopped()
        return (
            stopped
            if stopped is not None and reported_after_request(stopped, requested_at_ms)
            else None
        )

    report = answering()
    if report is not None:
        return StopObservation(report, driver_present=True)
    if live_lease(checkpoint) is not None or driver_alive(ref) or starting_driver(checkpoint):
        return StopObservation(None, driver_present=True)
    report = answering()
    if report is not None:
        return StopObservation(report, driver_present=False)
    marker = control.read_submitted()
    return StopObservation(
        None,
        driver_present=False,
        ended_before_running=ended_before_running(control.read_lease(), requested_at_ms),
        log_file=marker.log_file if marker else None,
    )


def poll_stop(
    checkpoint: str,
    requested_at_ms: int,
    ref: JobRef | None = None,
    awaited_restart: bool = False,
    *,
    bound_passed: bool = False,
) -> StopStep:
    """One poll of a stop: observe, decide, and once the driver has answered, wait (bounded)
    for its process or application to end, so the checkpoint is free when this returns."""
    observed = observe_stop(checkpoint, requested_at_ms, ref)
    step = decide_stop(
        observed, checkpoint=checkpoint, awaited_restart=awaited_restart, bound_passed=bound_passed
    )
    if step.outcome is StopOutcome.STOPPED and observed.driver_present:
        wait_gone(ref, 30)
    return step


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
    return _answer(poll_stop(checkpoint, requested_at_ms, ref, awaited_restart))


def _answer(step: StopStep) -> StoppedReport | NotRunning | None:
    if step.outcome is StopOutcome.STOPPED:
        return step.report
    if step.outcome is StopOutcome.NOT_RUNNING:
        return NotRunning(step.reason)
    if step.outcome is StopOutcome.GONE:
        raise StopTimeoutError(step.reason)
    return None


def wait_for_stop(
    checkpoint: str,
    started: StopStarted,
    *,
    poll_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> StopStep:
    """Poll the stop `started` until the driver answers, is gone or the bound passes
    (`TIMEOUT`: the caller forces or refuses, `force_stop`). A driver gone without a report
    raises `StopTimeoutError`, as `check_stop` does."""
    deadline = clock() + started.wait_s
    while True:
        step = poll_stop(
            checkpoint,
            started.request.requested_at_ms,
            started.ref,
            started.awaited_restart,
            bound_passed=clock() >= deadline,
        )
        if step.outcome is StopOutcome.GONE:
            raise StopTimeoutError(step.reason)
        if step.outcome is not StopOutcome.WAIT:
            return step
        sleep(poll_s)


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
    wait_gone(ref, 30)


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
    step = wait_for_stop(checkpoint, started, poll_s=poll_s)
    if step.outcome is StopOutcome.TIMEOUT:
        force_stop(checkpoint, drain_timeout_s, ref, allow_force_kill)
    return step.report


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
