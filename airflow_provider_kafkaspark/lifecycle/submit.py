"""Submit: observed, decided and then acted on, in one place for the operators and the CLI:
observe the checkpoint's lease, decide what `if_running` asks for, probe the bootstrap servers
and the topics, restore a savepoint if asked, and only then start the driver through the
deployment backend (local processes, a standalone cluster, YARN)."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from airflow_provider_kafkaspark.backends.base import (
    JobBackend,
    SubmitLookup,
    SubmitOptions,
    preflight,
)
from airflow_provider_kafkaspark.core.cluster.job_ref import job_ref_to_dict
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease, now_ms
from airflow_provider_kafkaspark.core.control.requests import (
    SubmittedMarker,
    awaits_lookup,
    resolve_starting,
)
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import JobSkippedError, NoLiveBootstrapError
from airflow_provider_kafkaspark.lifecycle.errors import JobRunningError
from airflow_provider_kafkaspark.lifecycle.handover import hand_over, retire_standby
from airflow_provider_kafkaspark.lifecycle.inputs import (
    check_if_running,
    live_first,
    with_connection,
)
from airflow_provider_kafkaspark.lifecycle.observe import (
    driver_gone,
    latest_committed,
    live_lease,
    marker_ref,
    starting_driver,
)
from airflow_provider_kafkaspark.lifecycle.record import (
    clear_stale_stop_request,
    record_submit,
    record_submitting,
)
from airflow_provider_kafkaspark.lifecycle.restore import restore_for_submit
from airflow_provider_kafkaspark.lifecycle.stop import stop_job

log = logging.getLogger(__name__)


class RunningDecision(str, Enum):
    SUBMIT = "submit"
    FAIL = "fail"
    SKIP = "skip"
    REPLACE = "replace"
    # A driver this same submitter started is still starting (its task was lost after the
    # submit, before its result was kept): its retry takes that driver up.
    ADOPT = "adopt"


def decide_if_running(
    lease: Lease | None,
    if_running: str,
    starting: SubmittedMarker | None = None,
    submitted_by: str = "",
    marker: SubmittedMarker | None = None,
) -> RunningDecision:
    """What a submit does about a live driver on the checkpoint, or one still starting (a
    submitted marker younger than its startup bound, no lease taken yet): a driver is there
    either way, and a second one would start next to it. A driver that this same submitter
    started (its task lost after the submit, before its result was kept) is taken up: one
    still starting (`starting`), or the live lease's holder when the checkpoint's `marker`
    is this submitter's and names the holder's application."""
    check_if_running(if_running)
    if lease is None and starting is None:
        return RunningDecision.SUBMIT
    if lease is None and starting is not None:
        if starting.job_ref is not None and starting.submitted_by == submitted_by:
            return RunningDecision.ADOPT
    if lease is not None and started_by(lease, marker, submitted_by):
        return RunningDecision.ADOPT
    return RunningDecision(if_running)


def started_by(lease: Lease, marker: SubmittedMarker | None, submitted_by: str) -> bool:
    """Whether the live lease's holder is the driver `submitted_by`'s submit started: the
    checkpoint's marker is theirs and names the application the holder runs in (the lease
    records it), so no other submit came between."""
    if marker is None or marker.submitted_by != submitted_by or marker.job_ref is None:
        return False
    application_id = marker.job_ref.get("application_id")
    return application_id is not None and lease.application_id == application_id


@dataclass(frozen=True)
class RestoreRequest:
    savepoint_root: str
    savepoint_ref: str
    mode: str = "checkpoint"


@dataclass(frozen=True)
class SubmitRequest:
    """A submit's inputs once connections are read: the spec (with the connection's servers
    and settings), the in-process Kafka client config (`repr` hides it: it may hold secrets),
    and what to do about a running driver, the probe and a restore."""

    spec: JobSpec
    kafka_client: dict[str, Any] = field(repr=False)
    options: SubmitOptions
    if_running: str = "fail"
    probe_bootstrap: bool = True
    probe_timeout_s: float = 5.0
    restore: RestoreRequest | None = None
    # A standby's handle (`handover.submit_standby`): handed the checkpoint instead of a
    # submit when it runs the same spec and lives; stopped when the submit fails.
    standby: dict[str, Any] | None = None
    # For messages: where the servers came from (a connection id, a file).
    servers_from: str = "the job spec"


def submit_streaming_job(backend: JobBackend, request: SubmitRequest) -> dict[str, Any]:
    """Observe, decide, act; returns the submit's handle (`submit_job`) with the
    dead bootstrap servers and the restore's summary added. A standby given with the request
    that is not handed over is stopped when the submit fails."""
    try:
        return _submit_streaming_job(backend, request)
    except BaseException:
        if request.standby is not None:
            retire_standby(request.standby)
        raise


def _submit_streaming_job(backend: JobBackend, request: SubmitRequest) -> dict[str, Any]:
    from airflow_provider_kafkaspark.core.spec.job_code import check_topics_exist

    spec = request.spec
    # Before a running driver is replaced or anything is written: a driver that cannot start
    # on this host fails the submit here, with the setting named, not later in its log.
    preflight(backend, spec)
    submitter = request.options.submitted_by
    lease = live_lease(spec.checkpoint_location)
    if lease is None:
        marker = starting_driver(spec.checkpoint_location)
    else:
        marker = ControlFolder(spec.checkpoint_location).read_submitted()
    marker = looked_up(backend, spec, marker, submitter)
    starting = marker if lease is None else None
    if starting is not None and driver_gone(marker_ref(starting, spec.checkpoint_location)):
        starting = None  # its start failed (a YARN application that ended): none is coming
    decision = decide_if_running(lease, request.if_running, starting, submitter, marker)
    replaced = False
    if decision is RunningDecision.ADOPT and marker is not None:
        log.warning(
            "job %s: the driver %s submitted %.0f s ago is %s: taking it up instead of "
            "submitting a second one",
            spec.job_name,
            submitter,
            (now_ms() - marker.submitted_at_ms) / 1000,
            "running" if lease is not None else "still starting",
        )
        return adopted_handle(spec, marker)
    if lease is not None or starting is not None:
        if lease is not None:
            message = f"job {spec.job_name} is running: {lease.describe()}"
        else:
            assert starting is not None
            message = (
                f"job {spec.job_name} is starting: a driver submitted by "
                f"{starting.submitted_by} has not taken its lease yet"
            )
        if decision is RunningDecision.FAIL:
            raise JobRunningError(message + " (if_running='fail')")
        if decision is RunningDecision.SKIP:
            raise JobSkippedError(message + " (if_running='skip')")
        log.info("%s: stopping it first (if_running='replace')", message)
        replaced = True
        stop_job(
            spec.checkpoint_location,
            requested_by=request.options.submitted_by,
            reason="replaced by a new submit",
            drain_timeout_s=spec.drain_timeout_s,
        )

    dead: list[str] = []
    if request.probe_bootstrap:
        from airflow_provider_kafkaspark.core.kafka.bootstrap_probe import probe_bootstrap

        report = probe_bootstrap(request.kafka_client, timeout_s=request.probe_timeout_s)
        dead = list(report.dead)
        if not report.healthy:
            raise NoLiveBootstrapError(
                f"no bootstrap server of {request.servers_from} answers: "
                + "; ".join(f"{s.server}: {s.reason}" for s in report.servers)
            )
        if dead:
            log.warning(
                "bootstrap servers that are dead or not cluster members: %s "
                "(submitting anyway with the live ones listed first)",
                ", ".join(dead),
            )
            servers = live_first(spec.source.bootstrap_servers, dead)
            spec = with_connection(spec, servers, spec.kafka_config)
        check_topics_exist(spec, request.kafka_client)

    restored: dict[str, Any] | None = None
    if request.restore is not None:
        spec, restored = restore_for_submit(
            spec,
            savepoint_root=request.restore.savepoint_root,
            savepoint_ref=request.restore.savepoint_ref,
            mode=request.restore.mode,
            kafka_config=request.kafka_client,
        )
        log.info("restored for submit: %s", restored)
    handle = None
    if request.standby is not None:
        handle = hand_over(spec, request.standby, request.options)
    if handle is None:
        handle = submit_job(backend, spec, request.options)
    # `replaced`: this submit stopped a driver that ran (a restart, for the job's metrics).
    handle.update(dead_bootstrap_servers=dead, restored=restored, replaced=replaced)
    return handle


def looked_up(
    backend: JobBackend, spec: JobSpec, starting: SubmittedMarker | None, submitted_by: str
) -> SubmittedMarker | None:
    """A starting driver whose marker was written before its cluster manager was asked
    (`record_submitting`), with the driver the manager keeps under the submit's id, when this
    backend can ask (`resolve_starting` decides). A driver found is written into the marker,
    so that a stop given only the checkpoint sees it too."""
    if starting is None or not awaits_lookup(starting) or not isinstance(backend, SubmitLookup):
        return starting
    assert starting.submit_id is not None
    found = backend.find_submitted(spec, starting.submit_id)
    resolved = resolve_starting(starting, job_ref_to_dict(found) if found else None, submitted_by)
    if resolved is not None and resolved.job_ref is not None:
        log.warning(
            "job %s: the submit %s of %s left no record of its driver; the cluster manager "
            "has it: %s",
            spec.job_name,
            starting.submit_id,
            starting.submitted_by,
            resolved.job_ref,
        )
        ControlFolder(spec.checkpoint_location).write_submitted(resolved)
    elif resolved is None:
        log.info(
            "job %s: an earlier try of this submit (%s) started no driver: submitting",
            spec.job_name,
            starting.submit_id,
        )
    return resolved


def adopted_handle(spec: JobSpec, starting: SubmittedMarker) -> dict[str, Any]:
    """The handle of a driver an earlier try of this submit started (its marker's)."""
    assert starting.job_ref is not None
    return {
        "mode": starting.job_ref.get("backend"),
        "job_name": spec.job_name,
        "checkpoint": spec.checkpoint_location,
        "job_ref": starting.job_ref,
        "since_batch": latest_committed(spec.checkpoint_location),
        "adopted": True,
        "dead_bootstrap_servers": [],
        "restored": None,
        "replaced": False,
    }


def submit_job(backend: JobBackend, spec: JobSpec, options: SubmitOptions) -> dict[str, Any]:
    """Start the job's driver through `backend` and return a small, durable handle: the job
    reference (`job_ref`, what stop and health take) and the batch it starts after.

    The caller has observed that no live driver holds the checkpoint's lease."""
    since = latest_committed(spec.checkpoint_location)
    control = ControlFolder(spec.checkpoint_location)
    clear_stale_stop_request(control)
    submitted_at = now_ms()
    options = replace(options, submit_id=uuid.uuid4().hex)
    lookup = isinstance(backend, SubmitLookup)
    if lookup:
        record_submitting(spec, options, submitted_at)
    try:
        submitted = backend.submit(spec, options)
    except Exception:
        if lookup:
            forget_failed_submit(backend, spec, options, control)
        raise
    return record_submit(spec, submitted.ref, submitted.details, options, submitted_at, since)


def forget_failed_submit(
    backend: JobBackend, spec: JobSpec, options: SubmitOptions, control: ControlFolder
) -> None:
    """After a submit that raised: its marker goes unless the cluster manager started a
    driver after all (then the marker names it), so a stop does not wait for a driver that
    never comes. Best effort: the submit's own error is what the caller sees."""
    assert isinstance(backend, SubmitLookup) and options.submit_id
    try:
        found = backend.find_submitted(spec, options.submit_id)
        if found is None:
            control.clear_submitted()
        else:
            record_submit(spec, found, {}, options, now_ms(), None)
    except Exception as exc:  # noqa: BLE001 - the submit's error matters more
        log.warning("job %s: the failed submit's marker stays: %s", spec.job_name, exc)
