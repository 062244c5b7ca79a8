"""What the verbs observe before they decide: the checkpoint's lease, its submitted marker and
what the backend says of the driver a reference names. Reads only."""

from __future__ import annotations

import logging
import socket
import time

from airflow_provider_kafkaspark.core.cluster.host_process import holder_gone, reap
from airflow_provider_kafkaspark.core.cluster.job_ref import (
    JobRef,
    KubernetesJobRef,
    LocalJobRef,
    job_ref_from_dict,
)
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease, now_ms
from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker, start_pending
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.errors import InvalidArgumentError

log = logging.getLogger(__name__)


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
    return marker if still_starting(control, marker) else None


def still_starting(control: ControlFolder, marker: SubmittedMarker | None) -> bool:
    if marker is None:
        return False
    gone = marker.pid is not None and holder_gone(marker.host, marker.pid)
    return start_pending(marker, control.read_lease(), control.read_stopped(), now_ms(), gone)


def driver_present(checkpoint: str) -> bool:
    """Whether a driver runs, or will run, on `checkpoint`: a live lease, a start still
    pending, or a driver its backend still lists without a lease (a cluster manager's restart
    of it, before the new attempt has taken the lease)."""
    if live_lease(checkpoint) is not None:
        return True
    control = ControlFolder(checkpoint)
    marker = control.read_submitted()
    if still_starting(control, marker):
        return True
    return driver_alive(marker_ref(marker, checkpoint))


def driver_alive(ref: JobRef | None) -> bool:
    """Whether the driver `ref` names is alive, as its backend sees it. A local driver of
    another host cannot be seen from here: not alive here, the lease decides. Errors of the
    backend (an unreachable ResourceManager, an application of another job) propagate."""
    if ref is None:
        return False
    from airflow_provider_kafkaspark.backends import backend_for

    return backend_for(ref).alive(ref) is True


def driver_gone(ref: JobRef | None) -> bool:
    """Whether the backend of the driver `ref` names knows it is gone (False when it cannot
    tell: no reference, or a local driver of another host)."""
    if ref is None:
        return False
    from airflow_provider_kafkaspark.backends import backend_for

    return backend_for(ref).alive(ref) is False


def local_ref(checkpoint: str, pid: int | None, job_name: str = "") -> LocalJobRef | None:
    """A reference for a driver known only by its pid on this host (older handles, tests)."""
    if not pid:
        return None
    return LocalJobRef(job_name, checkpoint, socket.gethostname(), pid, "", "")


def describe_ref(ref: JobRef) -> str:
    if isinstance(ref, LocalJobRef):
        return f"{ref.backend} driver pid {ref.pid} on {ref.host}"
    if isinstance(ref, KubernetesJobRef):
        return f"Kubernetes Job {ref.namespace}/{ref.name} (uid {ref.uid})"
    return f"YARN application {ref.application_id} at {ref.resource_manager}"


def wait_gone(ref: JobRef | None, timeout_s: float) -> None:
    """Bounded wait for the driver's end (a local child is reaped on the way)."""
    deadline = time.monotonic() + timeout_s
    while driver_alive(ref) and time.monotonic() < deadline:
        if isinstance(ref, LocalJobRef) and ref.host == socket.gethostname():
            reap(ref.pid)
        time.sleep(0.2)
