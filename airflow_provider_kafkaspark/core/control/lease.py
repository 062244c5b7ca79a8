"""The lease: which driver owns a checkpoint, and the pure rules for taking it.

A driver renews its lease by a heartbeat; a lease not renewed within its ttl has expired. The
rules here decide from what was read and observed (no I/O); `ControlFolder` (folder.py) does
the conditional reads and writes.

How old a lease is never compares two hosts' clocks where the storage can tell: a lease read
from storage carries its age by the storage's own clock (`observed_age_ms`: on S3 the answer's
Date minus the object's LastModified). The heartbeat time in the file is the holder's clock,
kept for people and for storage that tells no age; a holder whose clock runs behind (or a
reader whose clock runs ahead) would otherwise see a live lease as expired, and take it.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

DEFAULT_LEASE_TTL_MS = 30_000


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
    # Set by a read from storage, never written: how long ago the storage wrote this lease,
    # by the storage's clock (None: unknown, the heartbeat's own time is compared instead).
    observed_age_ms: int | None = field(default=None, compare=False, repr=False)

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
        return self.age_ms(at_ms) <= self.ttl_ms

    def age_ms(self, at_ms: int | None = None) -> int:
        """Since the last renewal: by the storage's clock when the read observed it, else
        `at_ms` (default: now, this host's clock) minus the holder's heartbeat time."""
        if self.observed_age_ms is not None:
            return self.observed_age_ms
        return (now_ms() if at_ms is None else at_ms) - self.heartbeat_at_ms

    def as_written(self) -> dict[str, object]:
        """The lease file's fields (what a read observed is not part of it)."""
        values = asdict(self)
        del values["observed_age_ms"]
        return values

    def taken(self, at_ms: int | None = None) -> Lease:
        """This owner's lease as it is taken now: started and renewed at `at_ms`. A driver
        builds its lease well before it takes it (a standby, for the whole wait for its
        handover); written with the time it was built, a lease just taken looked expired,
        to a health check and to any driver that may take over an expired lease."""
        t = now_ms() if at_ms is None else at_ms
        return replace(self, started_at_ms=t, heartbeat_at_ms=t, observed_age_ms=None)

    def renewed(self, at_ms: int | None = None, application_id: str | None = None) -> Lease:
        values = asdict(self)
        values["heartbeat_at_ms"] = now_ms() if at_ms is None else at_ms
        values["observed_age_ms"] = None
        if application_id is not None:
            values["application_id"] = application_id
        return Lease(**values)

    def describe(self) -> str:
        app = f", application {self.application_id}" if self.application_id else ""
        if self.application_id and self.attempt_id:
            app += f" attempt {self.attempt_id}"
        return f"driver {self.owner_id[:8]} (job {self.job_name}, {self.host} pid {self.pid}{app})"


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


# Application ids of drivers that are pods of a Kubernetes Job: the Job's uid after it, the
# attempt id being the pod's uid (`spark/managed.application_attempt`).
KUBERNETES_JOB_APP = "k8s-job:"


def later_attempt(held: Lease, mine: Lease) -> bool:
    """Whether `mine` is a later attempt of the application that holds `held`. A cluster
    manager starts an application's next attempt only once it has ended the one before (YARN
    runs one application master at a time; a Kubernetes Job whose pod failure policy is set
    creates a pod only once the one before has failed), so that holder is finished or lost:
    its lease need not be waited out. The holder's clock plays no part. YARN numbers its
    attempts, and a later one never hands its lease back; a Job's pods are not numbered, and
    while one of them runs no other does, so another pod of the Job is over."""
    if not (held.application_id and held.attempt_id and mine.attempt_id):
        return False
    if held.application_id != mine.application_id:
        return False
    if held.application_id.startswith(KUBERNETES_JOB_APP):
        return held.attempt_id != mine.attempt_id
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

    Take it when there is none, when it is ours, expired (by the storage's clock, when the
    read observed it), signed off by a stopped report, held by an earlier attempt of our own
    application, or by a process this host knows is gone. Refuse when the holder renewed it
    while we watched: a live driver. Otherwise the holder may have died where we cannot see
    (another node): wait, and take the lease once it stayed unchanged for its whole ttl by our
    own clock, whatever the holder's clock said.
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
