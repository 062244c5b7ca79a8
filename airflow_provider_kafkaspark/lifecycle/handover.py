"""A restart window with a warm handover: start the new driver before the old one stops.

    standby = submit_standby(backend, new_spec, options)   # while the old driver runs
    stop_job(...); savepoint_after_stop(...); restore_for_submit(...)
    handle = hand_over(new_spec, standby, submitted_by="...")  # None: submit cold instead

The standby (`spark/standby.py`) builds its Spark session and warms up while the old driver
still runs, then waits for the handover; the lease still guarantees one running query per
checkpoint. The cost is memory: for a while two drivers of the job run at once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.core.cluster.job_ref import (
    JobRef,
    LocalJobRef,
    job_ref_from_dict,
    job_ref_to_dict,
)
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.control.requests import Handover
from airflow_provider_kafkaspark.errors import InvalidArgumentError, KafkaSparkError
from airflow_provider_kafkaspark.lifecycle.observe import driver_alive, latest_committed, live_lease
from airflow_provider_kafkaspark.lifecycle.record import clear_stale_stop_request, record_submit

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.backends.base import JobBackend, SubmitOptions
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

log = logging.getLogger(__name__)

DEFAULT_STANDBY_TIMEOUT_S = 900.0


def submit_standby(
    backend: JobBackend,
    spec: JobSpec,
    options: SubmitOptions,
    *,
    timeout_s: float = DEFAULT_STANDBY_TIMEOUT_S,
) -> dict[str, Any]:
    """Start a standby driver for `spec`; returns its handle with its `standby_token`.

    Nothing is written to the checkpoint's control folder: the running driver's submitted
    marker stays what a stop of it reads. A standby no handover reaches within `timeout_s`
    exits (code 5) without touching the checkpoint."""
    token = f"{spec.job_name}-standby-{uuid.uuid4().hex[:12]}"
    standby_spec = dataclasses.replace(
        spec, standby_token=token, standby_timeout_s=timeout_s
    ).validate()
    submitted = backend.submit(standby_spec, options)
    log.info("standby %s submitted (%s)", token, submitted.ref.backend)
    return {
        "spec_digest": spec_digest(spec),
        **submitted.details,
        "mode": submitted.ref.backend,
        "job_name": spec.job_name,
        "checkpoint": spec.checkpoint_location,
        "job_ref": job_ref_to_dict(submitted.ref),
        "standby_token": token,
    }


def hand_over(
    spec: JobSpec, standby: dict[str, Any], options: SubmitOptions
) -> dict[str, Any] | None:
    """Release the standby onto the (restored) checkpoint of `spec`; returns the handle a
    submit would have returned, or None when the standby is gone (the caller submits cold).

    The caller has stopped the old driver; a live lease means it has not."""
    token = standby.get("standby_token")
    if not isinstance(token, str) or not isinstance(standby.get("job_ref"), dict):
        raise InvalidArgumentError(
            "standby handle: no 'standby_token' or 'job_ref' (pass the output of the standby "
            "submit)"
        )
    if standby.get("checkpoint") != spec.checkpoint_location:
        raise InvalidArgumentError(
            f"standby handle: its checkpoint {standby.get('checkpoint')!r} is not the job's "
            f"{spec.checkpoint_location!r}"
        )
    ref = _standby_ref(standby)
    if standby.get("spec_digest") != spec_digest(spec):
        # Another job version, or offsets a restore mode changed: the standby would run a
        # spec other than the one restored for.
        log.warning("standby %s runs another spec than the restored one: not used", token)
        retire_standby(standby)
        return None
    if not driver_alive(ref):
        log.warning("standby %s is not running: submitting cold instead", token)
        return None
    lease = live_lease(spec.checkpoint_location)
    if lease is not None:
        raise InvalidArgumentError(
            f"{spec.checkpoint_location}: no handover while a driver holds the lease "
            f"({lease.describe()}); stop it first"
        )
    control = ControlFolder(spec.checkpoint_location)
    since = latest_committed(spec.checkpoint_location)
    clear_stale_stop_request(control)
    # Submitted, as far as a stop is concerned, now: the standby starts its query from here.
    # The standby's handle keeps its details (log file, token); the digest served its purpose.
    details = {k: v for k, v in standby.items() if k != "spec_digest"}
    handle = record_submit(spec, ref, details, options, now_ms(), since)
    control.write_handover(Handover(token, now_ms(), options.submitted_by))
    log.info("handed %s over to standby %s", spec.checkpoint_location, token)
    return handle


def spec_digest(spec: JobSpec) -> str:
    """A digest of everything the driver runs, the standby fields aside."""
    plain = dataclasses.replace(spec, standby_token=None, standby_timeout_s=0.0)
    return hashlib.sha256(plain.to_json().encode()).hexdigest()[:16]


def wait_standby_ready(standby: dict[str, Any], timeout_s: float, poll_s: float = 1.0) -> float:
    """Wait until the standby says it is warm; returns the seconds waited. Raises when it
    exits first or `timeout_s` passes (and then stops it: it has touched nothing)."""
    token = standby["standby_token"]
    ref = _standby_ref(standby)
    control = ControlFolder(standby["checkpoint"])
    began = time.monotonic()
    while True:
        ready = control.read_standby_ready()
        if ready is not None and ready.token == token:
            log.info("standby %s ready: warm-up %s", token, ready.warm_up_s)
            return time.monotonic() - began
        if not driver_alive(ref):
            raise StandbyError(f"standby {token} exited before it was ready" + _log(ref))
        if time.monotonic() - began > timeout_s:
            retire_standby(standby)
            raise StandbyError(f"standby {token} not ready within {timeout_s:g}s" + _log(ref))
        time.sleep(poll_s)


def retire_standby(standby: dict[str, Any]) -> None:
    """Stop a standby that will not be handed over. It holds no lease and has written nothing
    but its ready file, so a kill loses nothing."""
    from airflow_provider_kafkaspark.backends import kill_driver

    ref = _standby_ref(standby)
    if driver_alive(ref):
        log.info("stopping standby %s, which will not be handed over", standby["standby_token"])
        kill_driver(ref)


def _standby_ref(standby: dict[str, Any]) -> JobRef:
    return job_ref_from_dict(standby["job_ref"], "standby handle")


def _log(ref: JobRef) -> str:
    log_file = ref.log_file if isinstance(ref, LocalJobRef) else ""
    return f" (driver log: {log_file})" if log_file else ""


class StandbyError(KafkaSparkError):
    """A standby driver did not get ready."""
