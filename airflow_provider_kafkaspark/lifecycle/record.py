"""What a driver's start writes to its checkpoint's control folder, whether a submit started
it or a handover released a standby onto the checkpoint: the stale stop request goes, the
submitted marker names the driver, and the caller gets the submit's handle."""

from __future__ import annotations

import logging
import socket
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef, LocalJobRef, job_ref_to_dict
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.backends.base import SubmitOptions
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

log = logging.getLogger(__name__)


def clear_stale_stop_request(control: ControlFolder) -> None:
    """Before a driver is started (or handed over) with no live driver on the checkpoint:
    whoever a stop request there was for is gone, and the new driver would stop at once."""
    if control.read_stop_request() is not None:
        log.info("clearing a stop request left by an earlier driver")
        control.clear_stop_request()


def record_submitting(spec: JobSpec, options: SubmitOptions, submitted_at_ms: int) -> None:
    """Before a cluster manager that keeps the submit's id is asked: the marker names the
    submit but no driver yet, so a retry of a submit whose host dies before `record_submit`
    asks the manager for that id instead of starting a second driver."""
    ControlFolder(spec.checkpoint_location).write_submitted(
        SubmittedMarker(
            submitted_at_ms=submitted_at_ms,
            job_name=spec.job_name,
            submitted_by=options.submitted_by,
            host=socket.gethostname(),
            submit_id=options.submit_id,
        )
    )


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
            submit_id=options.submit_id,
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
