"""What is written to a driver (a stop request, a submitted marker, a handover), and the
pure rules a stopper decides from: is a submitted driver still starting, how long to wait."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.core.control.reports import StoppedReport


@dataclass(frozen=True)
class StopRequest:
    requested_at_ms: int
    requested_by: str
    reason: str = "requested"
    drain_timeout_s: float = 120.0
    # Stop once the batch in flight has committed, cutting short one Spark already planned
    # (`core/control/drain`): for a stop whose savepoint is restored in `checkpoint` mode.
    at_batch_boundary: bool = False


@dataclass(frozen=True)
class Handover:
    """Written by a restore once the checkpoint is ready for the standby driver whose
    `token` it names (see `handover.py`): that driver takes the lease and starts its query."""

    token: str
    handed_over_at_ms: int
    handed_over_by: str


@dataclass(frozen=True)
class SubmittedMarker:
    """Left by a submit before the driver starts. A driver takes the lease only once Spark is
    up (tens of seconds); a stop issued in between sees this and waits for the driver instead
    of finding nothing to stop. `log_file` is where the driver writes, for error messages."""

    submitted_at_ms: int
    job_name: str
    submitted_by: str
    host: str
    pid: int | None = None  # the local launcher's process on `host`; None for cluster submits
    log_file: str | None = None
    startup_timeout_ms: int = 300_000
    # The submitted driver's job reference (`job_ref_to_dict`): a stop given only the
    # checkpoint asks its backend whether the driver lives, e.g. while YARN restarts it.
    # None in the marker a submit writes before it asks the cluster manager (below).
    job_ref: dict[str, Any] | None = None
    # The submit's own id, which the cluster manager keeps with the driver (a YARN
    # application tag): a retry of a submit whose host died between the manager's accepting
    # the driver and the marker naming it finds that driver by this id.
    submit_id: str | None = None


def start_pending(
    marker: SubmittedMarker | None,
    lease: Lease | None,
    stopped: StoppedReport | None,
    at_ms: int,
    launcher_gone: bool = False,
) -> bool:
    """True while a submitted driver may still be starting: a marker younger than its startup
    bound, no lease taken and no stopped report written since, and its launcher (when it ran
    on this host) still running."""
    if marker is None or launcher_gone:
        return False
    if at_ms - marker.submitted_at_ms > marker.startup_timeout_ms:
        return False
    if lease is not None and lease.started_at_ms >= marker.submitted_at_ms:
        return False
    return not (stopped is not None and stopped.stopped_at_ms >= marker.submitted_at_ms)


def awaits_lookup(marker: SubmittedMarker | None) -> bool:
    """Whether a marker names a submit but no driver yet: written before the cluster manager
    was asked, so only the manager (by the submit's id) can say what it started."""
    return marker is not None and marker.job_ref is None and bool(marker.submit_id)


def resolve_starting(
    starting: SubmittedMarker | None, found: dict[str, Any] | None, submitted_by: str
) -> SubmittedMarker | None:
    """A starting driver whose marker names no reference yet (written before the cluster
    manager was asked), once the manager has been asked for the submit's id: the driver it
    `found` (a job reference), else, when `submitted_by` wrote the marker, none (that submit
    died before the manager accepted anything, and this is its retry); a marker of another
    submitter stays as it is (its submit may still be on its way)."""
    if starting is None or not awaits_lookup(starting):
        return starting
    if found is not None:
        return replace(starting, job_ref=found)
    return None if starting.submitted_by == submitted_by else starting


def ended_before_running(lease: Lease | None, requested_at_ms: int) -> bool:
    """Whether no driver held a live lease when a stop was requested, nor took one since:
    the driver the stop waited for (one its backend still listed while it was exiting) never
    ran after the request, so nothing was stopped. A holder live at the request that is gone
    without a report crashed: not this case."""
    if lease is None:
        return True
    # A question about the moment of the request, not about now: the heartbeat's own time
    # against the request's (two hosts' clocks; the storage tells ages only as of now).
    expired_at_request = requested_at_ms - lease.heartbeat_at_ms > lease.ttl_ms
    return lease.started_at_ms < requested_at_ms and expired_at_request


def stop_wait_s(
    base_wait_s: float,
    *,
    lease_live: bool,
    backend_alive: bool,
    marker: SubmittedMarker | None,
    starting: bool,
    at_ms: int,
) -> float | None:
    """How long a stopper waits for the stopped report, or None when nothing runs or starts.

    `base_wait_s` covers a running driver's drain and exit. A driver its backend reports
    alive without a lease is starting again (YARN's next attempt, a local restart) and gets
    the marker's startup bound on top; so does one still starting after its submit, for
    what remains of that bound."""
    if lease_live:
        return base_wait_s
    if backend_alive:
        bound_ms = marker.startup_timeout_ms if marker is not None else 300_000
        return base_wait_s + bound_ms / 1000
    if starting and marker is not None:
        remaining_ms = marker.submitted_at_ms + marker.startup_timeout_ms - at_ms
        return base_wait_s + max(0.0, remaining_ms / 1000)
    return None


def reported_after_request(stopped: StoppedReport, requested_at_ms: int) -> bool:
    """Whether a stopped report came after the stop requested at `requested_at_ms`. A report
    that names the request it answers is matched by that request's own time (stamped by the
    requester's clock, and copied by the driver), never by the driver's clock, which may run
    behind the requester's; one that names none (a failure, SIGTERM) by when it was written."""
    if stopped.requested_at_ms is not None:
        return stopped.requested_at_ms >= requested_at_ms
    return stopped.stopped_at_ms >= requested_at_ms
