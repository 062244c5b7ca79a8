"""The control folder `_kafkaspark/` inside a checkpoint location; Spark ignores it.

The Spark driver writes the lease, the stopped report and the progress file; operators and
the CLI write the stop request and the submitted marker and read the rest. Every write is
atomic (temp file, then rename), so a reader never sees half a file. The lease is written
conditionally (create if absent, replace if unchanged; core/conditional_files.py), so of two
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
import os
import socket
import time
import uuid
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, TypeVar

from airflow_provider_kafkaspark.core.checkpoint import CONTROL_DIR
from airflow_provider_kafkaspark.core.conditional_files import conditional_files
from airflow_provider_kafkaspark.core.storage import Location, open_location
from airflow_provider_kafkaspark.errors import (
    ControlFileError,
    LeaseHeldError,
    LeaseLostError,
    StorageError,
    StorageNotFoundError,
)

LEASE_FILE = "lease.json"
STOP_REQUEST_FILE = "stop-request.json"
STOPPED_FILE = "stopped.json"
PROGRESS_FILE = "progress.json"
SUBMITTED_FILE = "submitted.json"
HANDOVER_FILE = "handover.json"
STANDBY_READY_FILE = "standby-ready.json"
SUPERVISOR_FILE = "supervisor.json"
WRITTEN_BY_FILE = "written-by.json"
DEFAULT_LEASE_TTL_MS = 30_000

T = TypeVar("T")


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Lease:
    """Which driver owns the checkpoint; renewed by a heartbeat every few seconds."""

    owner_id: str
    job_name: str
    host: str
    pid: int
    started_at_ms: int
    heartbeat_at_ms: int
    ttl_ms: int = DEFAULT_LEASE_TTL_MS
    # The cluster manager's application and attempt (YARN: application_..., "1", "2"): a
    # later attempt of the same application may take over an earlier one's lease at once.
    application_id: str | None = None
    attempt_id: str | None = None

    @classmethod
    def new(
        cls,
        job_name: str,
        *,
        ttl_ms: int = DEFAULT_LEASE_TTL_MS,
        at_ms: int | None = None,
        application_id: str | None = None,
        attempt_id: str | None = None,
    ) -> Lease:
        t = now_ms() if at_ms is None else at_ms
        return cls(
            owner_id=uuid.uuid4().hex,
            job_name=job_name,
            host=socket.gethostname(),
            pid=os.getpid(),
            started_at_ms=t,
            heartbeat_at_ms=t,
            ttl_ms=ttl_ms,
            application_id=application_id,
            attempt_id=attempt_id,
        )

    def is_fresh(self, at_ms: int | None = None) -> bool:
        return ((now_ms() if at_ms is None else at_ms) - self.heartbeat_at_ms) <= self.ttl_ms

    def age_ms(self, at_ms: int | None = None) -> int:
        return (now_ms() if at_ms is None else at_ms) - self.heartbeat_at_ms

    def taken(self, at_ms: int | None = None) -> Lease:
        """This owner's lease as it is taken now: started and renewed at `at_ms`. A driver
        builds its lease well before it takes it (a standby, for the whole wait for its
        handover); written with the time it was built, a lease just taken looked expired,
        to a health check and to any driver that may take over an expired lease."""
        t = now_ms() if at_ms is None else at_ms
        return replace(self, started_at_ms=t, heartbeat_at_ms=t)

    def renewed(self, at_ms: int | None = None, application_id: str | None = None) -> Lease:
        values = asdict(self)
        values["heartbeat_at_ms"] = now_ms() if at_ms is None else at_ms
        if application_id is not None:
            values["application_id"] = application_id
        return Lease(**values)

    def describe(self) -> str:
        app = f", application {self.application_id}" if self.application_id else ""
        if self.application_id and self.attempt_id:
            app += f" attempt {self.attempt_id}"
        return f"driver {self.owner_id[:8]} (job {self.job_name}, {self.host} pid {self.pid}{app})"


@dataclass(frozen=True)
class StopRequest:
    requested_at_ms: int
    requested_by: str
    reason: str = "requested"
    drain_timeout_s: float = 120.0
    # Stop once the batch in flight has committed, cutting short one Spark already planned
    # (`core/drain`): for a stop whose savepoint is restored in `checkpoint` mode.
    at_batch_boundary: bool = False


@dataclass(frozen=True)
class StoppedReport:
    """What the driver leaves when it drains and exits (or fails to)."""

    stopped_at_ms: int
    reason: str
    clean: bool  # True when the last planned batch was committed before exit
    last_planned_batch: int | None
    last_committed_batch: int | None
    offsets: dict[str, dict[str, int]] = field(default_factory=dict)
    owner_id: str | None = None
    message: str = ""
    # The driver's exit code: 4 (bad job) is final, the supervisor does not restart it.
    exit_code: int | None = None
    # The Spark that wrote the checkpoint (the driver's, not the stopper's): what a savepoint
    # of it records. None from drivers of earlier releases.
    spark_version: str | None = None
    # The stop request this report answers (None: SIGTERM, a failure, the end of the input):
    # how a retried stop recognises the stop its earlier try made.
    requested_by: str | None = None
    requested_at_ms: int | None = None

    def describe(self) -> str:
        at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.stopped_at_ms / 1000))
        text = (
            f"the driver stopped at {at} ({self.reason}; last committed batch "
            f"{self.last_committed_batch}, {'clean' if self.clean else 'not clean'})"
        )
        return f"{text}: {self.message}" if self.message else text


@dataclass(frozen=True)
class StandbyReady:
    """Written by a standby driver once it has warmed up and waits for its handover."""

    token: str
    ready_at_ms: int
    warm_up_s: dict[str, float] = field(default_factory=dict)


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
    job_ref: dict[str, Any] | None = None


@dataclass(frozen=True)
class SupervisorState:
    """What the local supervisor says of its runner; `ended` once it restarts no more."""

    attempt: int
    runner_pid: int
    started_at_ms: int
    policy: dict[str, Any] = field(default_factory=dict)
    last_exit: int | None = None
    exited_at_ms: int | None = None
    gave_up: bool | None = None
    ended: bool = False


@dataclass(frozen=True)
class BatchProgress:
    batch_id: int
    timestamp: str
    num_input_rows: int
    input_rows_per_second: float
    processed_rows_per_second: float
    duration_ms: dict[str, int]
    end_offsets: dict[str, dict[str, int]]
    latest_offsets: dict[str, dict[str, int]]


@dataclass(frozen=True)
class ProgressFile:
    """A compact, bounded record of the last batches, for sensors and people."""

    query_id: str
    run_id: str
    updated_at_ms: int
    batches: tuple[BatchProgress, ...] = ()
    lag_commits_ok: int = 0
    lag_commits_failed: int = 0

    @property
    def last_batch(self) -> BatchProgress | None:
        return self.batches[-1] if self.batches else None


def lease_step(
    current: Lease | None, owner_id: str, *, at_ms: int | None = None, force: bool = False
) -> Literal["create", "replace", "refuse"]:
    """What taking the lease for `owner_id` needs, given the lease there now: create the
    file, replace it (ours already, expired, or forced), or refuse (another owner's, fresh)."""
    if current is None:
        return "create"
    if current.owner_id == owner_id or force or not current.is_fresh(at_ms):
        return "replace"
    return "refuse"


@dataclass(frozen=True)
class WrittenBy:
    """The newest Spark that wrote a checkpoint: recorded by each driver as it starts and by a
    restore from the savepoint's manifest, so that an earlier Spark is refused
    (`core/spark_compat.py`)."""

    spark_version: str
    recorded_at_ms: int


def later_attempt(held: Lease, mine: Lease) -> bool:
    """Whether `mine` is a later attempt of the application that holds `held`. A cluster
    manager starts an application's next attempt only once it has ended the one before (YARN
    runs one application master at a time), so that holder is finished or lost: its lease
    need not be waited out. The holder's clock plays no part."""
    if not (held.application_id and held.attempt_id and mine.attempt_id):
        return False
    if held.application_id != mine.application_id:
        return False
    try:
        return int(held.attempt_id) < int(mine.attempt_id)
    except ValueError:
        return False


TakeoverStep = Literal["take", "wait", "refuse"]


def takeover_step(
    held: Lease | None,
    mine: Lease,
    *,
    unchanged_for_ms: float,
    renewed_while_watched: bool,
    holder_gone: bool = False,
    holder_stopped: bool = False,
    at_ms: int | None = None,
) -> TakeoverStep:
    """What a starting driver does about the lease it found, from what it observed.

    Take it when there is none, when it is ours, expired, signed off by a stopped report,
    held by an earlier attempt of our own application, or by a process this host knows is
    gone. Refuse when the holder renewed it while we watched: a live driver. Otherwise the
    holder may have died where we cannot see (another node): wait, and take the lease once
    it stayed unchanged for its whole ttl by our own clock, whatever the holder's clock said.
    """
    if held is None or held.owner_id == mine.owner_id:
        return "take"
    if holder_stopped or holder_gone or later_attempt(held, mine):
        return "take"
    if not held.is_fresh(at_ms) or unchanged_for_ms > held.ttl_ms:
        return "take"
    if renewed_while_watched:
        return "refuse"
    return "wait"


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
        return self._read(LEASE_FILE, Lease)

    @property
    def lease_guarantee(self) -> str:
        """How exclusive the lease is on this storage (see core/conditional_files.py)."""
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
        return _from_dict(Lease, raw, where), found.version

    def _write_lease(self, lease: Lease, version: str | None) -> bool:
        """Create the lease file (version None) or replace the one at `version`; the version
        written is kept for this owner's next renewal or release."""
        data = json.dumps(asdict(lease), sort_keys=True).encode("utf-8")
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


def ended_before_running(lease: Lease | None, requested_at_ms: int) -> bool:
    """Whether no driver held a live lease when a stop was requested, nor took one since:
    the driver the stop waited for (one its backend still listed while it was exiting) never
    ran after the request, so nothing was stopped. A holder live at the request that is gone
    without a report crashed: not this case."""
    if lease is None:
        return True
    return lease.started_at_ms < requested_at_ms and not lease.is_fresh(requested_at_ms)


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
