"""The control folder `_kafkaspark/` inside a checkpoint location; Spark ignores it.

The Spark driver writes the lease, the stopped report and the progress file; operators and
the CLI write the stop request and the submitted marker and read the rest. Every write is
atomic (temp file, then rename), so a reader never sees half a file. The lease is written
conditionally (create if absent, replace if unchanged; core/storage/conditional_files.py), so of two
drivers that race for one checkpoint exactly one takes it.

Renewal and release are fenced: each is conditional on the version of the lease file this
holder last wrote (an S3 ETag, a digest on local disk), so a driver paused past its lease's
expiry, whose lease another driver took over (and perhaps released since), is refused on
its next renewal instead of writing the lease back.

A stopped report signed by the lease's holder ends that lease: the driver writes the report
once its query has stopped and removes the lease only after it, so a reader that sees the
report may act on the checkpoint at once (`ControlFolder.live_lease`), with or without a pid.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields, replace
from typing import Any, TypeVar

from airflow_provider_kafkaspark.core.control.lease import Lease, lease_step, now_ms
from airflow_provider_kafkaspark.core.control.reports import (
    BatchProgress,
    ProgressFile,
    StandbyReady,
    StoppedReport,
    SupervisorState,
    WrittenBy,
)
from airflow_provider_kafkaspark.core.control.requests import Handover, StopRequest, SubmittedMarker
from airflow_provider_kafkaspark.core.storage.conditional_files import conditional_files
from airflow_provider_kafkaspark.core.storage.location import Location, open_location
from airflow_provider_kafkaspark.errors import (
    ControlFileError,
    LeaseHeldError,
    LeaseLostError,
    StorageError,
    StorageNotFoundError,
)

# The control folder inside a checkpoint location; Spark ignores names starting with `_`.
CONTROL_DIR = "_kafkaspark"
LEASE_FILE = "lease.json"
STOP_REQUEST_FILE = "stop-request.json"
STOPPED_FILE = "stopped.json"
PROGRESS_FILE = "progress.json"
SUBMITTED_FILE = "submitted.json"
HANDOVER_FILE = "handover.json"
STANDBY_READY_FILE = "standby-ready.json"
SUPERVISOR_FILE = "supervisor.json"
WRITTEN_BY_FILE = "written-by.json"
# The deployment's record (core/deploy): it stays with the job's checkpoint location when a
# restore moves the checkpoint aside (core/state/restore.move_aside).
DEPLOYMENT_FILE = "deployment.json"
# The code of each deployed spec (lifecycle/deploy_code.py): it stays with the location too.
CODE_DIR = "code"

T = TypeVar("T")


class ControlFolder:
    """Readers and writers of the control files of one checkpoint location."""

    def __init__(self, checkpoint: str | Location) -> None:
        base = open_location(checkpoint) if isinstance(checkpoint, str) else checkpoint
        self.location = base.child(CONTROL_DIR)
        self._lease_files = conditional_files(self.location)
        # owner id -> the version of the lease file that owner last wrote through this folder:
        # what its renewal and release are conditional on.
        self._lease_versions: dict[str, str] = {}

    # -- generic --------------------------------------------------------------------

    def _read(self, name: str, kind: type[T]) -> T | None:
        """The file's value, or None when it is absent: read straight away rather than after
        an existence check, which on an object store cost a request of its own and could see
        a file (a lease being released) that was gone by the read."""
        where = self.location.describe(name)
        try:
            raw = json.loads(self.location.read_text(name))
        except StorageNotFoundError:
            return None
        except json.JSONDecodeError as exc:
            raise ControlFileError(f"{where}: not JSON ({exc.msg})") from exc
        except StorageError as exc:
            raise ControlFileError(str(exc)) from exc
        return _from_dict(kind, raw, where)

    def _write(self, name: str, value: Any) -> None:
        self.location.write_atomic(json.dumps(asdict(value), sort_keys=True), name)

    def _remove(self, name: str) -> None:
        if self.location.exists(name):
            self.location.fs.rm(self.location.path(name))

    # -- lease ----------------------------------------------------------------------

    def read_lease(self) -> Lease | None:
        """The lease, with its age by the storage's clock where the storage tells it."""
        try:
            found = self._read_lease_versioned()
        except StorageError as exc:
            raise ControlFileError(str(exc)) from exc
        except OSError as exc:
            raise ControlFileError(f"{self.location.describe(LEASE_FILE)}: {exc}") from exc
        return found[0] if found is not None else None

    @property
    def lease_guarantee(self) -> str:
        """How exclusive the lease is on this storage (see core/storage/conditional_files.py)."""
        return self._lease_files.guarantee

    def acquire_lease(
        self,
        lease: Lease,
        *,
        at_ms: int | None = None,
        force: bool = False,
        over: Lease | None = None,
    ) -> Lease | None:
        """Take the lease for `lease.owner_id`; returns the expired lease taken over, if any.

        Refuses with `LeaseHeldError` while another owner's lease is fresh, unless it is
        exactly `over` (the lease a caller decided to take over, `takeover_step`): a lease
        renewed or taken by another since is refused. The write is conditional on what was
        read (create if absent, replace if unchanged): of two drivers racing, the one whose
        condition no longer holds refuses."""
        current = self._read_lease_versioned()
        held = current[0] if current else None
        force = force or (over is not None and held == over)
        step = lease_step(held, lease.owner_id, at_ms=at_ms, force=force)
        if step == "refuse":
            assert held is not None
            raise LeaseHeldError(
                f"{self.location.describe(LEASE_FILE)}: held by {held.describe()}, "
                f"heartbeat {held.age_ms(at_ms) / 1000:.1f}s ago "
                f"(expires after {held.ttl_ms / 1000:.0f}s); two drivers on one "
                f"checkpoint read partitions twice and corrupt it"
            )
        if not self._write_lease(lease, current[1] if current else None):
            winner = self.read_lease()
            holder = winner.describe() if winner else "nobody"
            raise LeaseHeldError(f"{self.location.describe(LEASE_FILE)}: lost the race to {holder}")
        return held if held is not None and held.owner_id != lease.owner_id else None

    def renew_lease(self, lease: Lease, *, application_id: str | None = None) -> Lease:
        """Renew the lease this folder last wrote for `lease.owner_id`, on condition that the
        file is still that version. Raises `LeaseLostError` when it was taken over, removed
        (another driver took it over and released it) or never held here: the caller must
        stop, not take the lease again."""
        where = self.location.describe(LEASE_FILE)
        version = self._lease_versions.get(lease.owner_id)
        if version is None:
            raise LeaseLostError(f"{where}: not held by {lease.describe()}")
        renewed = lease.renewed(application_id=application_id)
        if self._write_lease(renewed, version):
            return renewed
        current = self._read_lease_versioned()
        if current is not None and current[0].owner_id == lease.owner_id:
            # Our own write whose answer was lost (a retried request): only this owner ever
            # writes its id, so nobody came in between; continue from that version.
            self._lease_versions[lease.owner_id] = current[1]
            if self._write_lease(renewed, current[1]):
                return renewed
            current = self._read_lease_versioned()
        self._lease_versions.pop(lease.owner_id, None)
        if current is None:
            raise LeaseLostError(
                f"{where}: gone since {lease.describe()} last renewed it (taken over and "
                f"released by another driver, or removed)"
            )
        raise LeaseLostError(f"{where}: taken over by {current[0].describe()}")

    def release_lease(self, lease: Lease) -> None:
        """Remove the lease if it is still the version this owner last wrote; a lease taken
        over since is another driver's and stays."""
        version = self._lease_versions.pop(lease.owner_id, None)
        if version is not None:
            self._lease_files.delete(self.location.path(LEASE_FILE), version)

    def _read_lease_versioned(self) -> tuple[Lease, str] | None:
        found = self._lease_files.read(self.location.path(LEASE_FILE))
        if found is None:
            return None
        where = self.location.describe(LEASE_FILE)
        try:
            raw = json.loads(found.data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ControlFileError(f"{where}: not JSON ({exc})") from exc
        lease = replace(_from_dict(Lease, raw, where), observed_age_ms=found.age_ms)
        return lease, found.version

    def _write_lease(self, lease: Lease, version: str | None) -> bool:
        """Create the lease file (version None) or replace the one at `version`; the version
        written is kept for this owner's next renewal or release."""
        data = json.dumps(lease.as_written(), sort_keys=True).encode("utf-8")
        path = self.location.path(LEASE_FILE)
        if version is None:
            written = self._lease_files.create(path, data)
        else:
            written = self._lease_files.replace(path, data, version)
        if written is None:
            return False
        self._lease_versions[lease.owner_id] = written
        return True

    def live_lease(self, at_ms: int | None = None) -> Lease | None:
        """The lease of a driver that may still run, or None: no lease, an expired one, or
        one whose holder has written its stopped report (its query has stopped; the lease
        file goes right after)."""
        lease = self.read_lease()
        if lease is None or not lease.is_fresh(at_ms):
            return None
        stopped = self.read_stopped()
        if stopped is not None and stopped.owner_id == lease.owner_id:
            return None
        return lease

    def finish(self, lease: Lease, report: StoppedReport) -> None:
        """The driver's last step, in this order: a last fenced renewal (`LeaseLostError`
        when the lease is no longer this driver's: the report is then another driver's to
        write), the report (which ends the lease for every reader), then the lease file."""
        self.renew_lease(lease)
        self.write_stopped(report)
        self.release_lease(lease)

    # -- stop request / stopped report -------------------------------------------------

    def request_stop(self, request: StopRequest) -> None:
        self._write(STOP_REQUEST_FILE, request)

    def read_stop_request(self) -> StopRequest | None:
        return self._read(STOP_REQUEST_FILE, StopRequest)

    def clear_stop_request(self) -> None:
        self._remove(STOP_REQUEST_FILE)

    def write_stopped(self, report: StoppedReport) -> None:
        self._write(STOPPED_FILE, report)

    def read_stopped(self) -> StoppedReport | None:
        return self._read(STOPPED_FILE, StoppedReport)

    def clear_stopped(self) -> None:
        self._remove(STOPPED_FILE)

    # -- submitted marker / supervisor --------------------------------------------------

    def write_submitted(self, marker: SubmittedMarker) -> None:
        self._write(SUBMITTED_FILE, marker)

    def read_submitted(self) -> SubmittedMarker | None:
        return self._read(SUBMITTED_FILE, SubmittedMarker)

    def clear_submitted(self) -> None:
        self._remove(SUBMITTED_FILE)

    def write_handover(self, handover: Handover) -> None:
        self._write(HANDOVER_FILE, handover)

    def read_handover(self) -> Handover | None:
        return self._read(HANDOVER_FILE, Handover)

    def write_standby_ready(self, ready: StandbyReady) -> None:
        self._write(STANDBY_READY_FILE, ready)

    def read_standby_ready(self) -> StandbyReady | None:
        return self._read(STANDBY_READY_FILE, StandbyReady)

    def write_supervisor(self, state: SupervisorState) -> None:
        self._write(SUPERVISOR_FILE, state)

    def read_supervisor(self) -> SupervisorState | None:
        return self._read(SUPERVISOR_FILE, SupervisorState)

    def write_written_by(self, written_by: WrittenBy) -> None:
        self._write(WRITTEN_BY_FILE, written_by)

    def read_written_by(self) -> WrittenBy | None:
        return self._read(WRITTEN_BY_FILE, WrittenBy)

    # -- progress ----------------------------------------------------------------------

    def write_progress(self, progress: ProgressFile) -> None:
        self._write(PROGRESS_FILE, progress)

    def read_progress(self) -> ProgressFile | None:
        return self._read(PROGRESS_FILE, ProgressFile)


def _from_dict(kind: type[T], raw: Any, where: str) -> T:
    if not isinstance(raw, dict):
        raise ControlFileError(f"{where}: expected a JSON object")
    names = {f.name: f for f in fields(kind)}  # type: ignore[arg-type]
    unknown = sorted(set(raw) - set(names))
    if unknown:
        raise ControlFileError(f"{where}: unknown fields {unknown}")
    values = dict(raw)
    if kind is ProgressFile and "batches" in values:
        if not isinstance(values["batches"], list):
            raise ControlFileError(f"{where}: 'batches' is not a list")
        values["batches"] = tuple(
            _from_dict(BatchProgress, b, f"{where} batch {i}")
            for i, b in enumerate(values["batches"])
        )
    try:
        return kind(**values)
    except TypeError as exc:
        raise ControlFileError(f"{where}: {exc}") from exc


def request_stop(
    checkpoint: str,
    *,
    requested_by: str = "kafkaspark",
    reason: str = "requested",
    drain_timeout_s: float = 120.0,
    at_batch_boundary: bool = False,
) -> StopRequest:
    """Ask the driver of `checkpoint` to stop (it polls its control folder); the request."""
    request = StopRequest(now_ms(), requested_by, reason, drain_timeout_s, at_batch_boundary)
    ControlFolder(checkpoint).request_stop(request)
    return request
