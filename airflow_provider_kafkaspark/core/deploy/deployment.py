"""A deployment's record (`deployment.json` in the job's control folder): the desired and the
last stable spec, the savepoint each stands on, a lifecycle status and a bounded history of
transitions. Pure: reading and writing it is `core/deploy/record_file.py`.

    DEPLOYED      submitted, not through its health gate yet
    STABLE        through the health gate: what a rollback returns to
    UPGRADING     an upgrade holds the deployment (`holder` says who)
    ROLLING_BACK  the upgrade was unhealthy: the stable spec is being restored
    ROLLED_BACK   the stable spec runs again; `desired` is the spec that failed
    FAILED        neither the desired nor the stable spec is known to run healthy
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any

from airflow_provider_kafkaspark.errors import ControlFileError, InvalidArgumentError

FORMAT_VERSION = 1
# Enough for weeks of daily windows; older transitions are in the task logs.
MAX_HISTORY = 50


class DeploymentStatus(str, enum.Enum):
    DEPLOYED = "DEPLOYED"
    STABLE = "STABLE"
    UPGRADING = "UPGRADING"
    ROLLING_BACK = "ROLLING_BACK"
    ROLLED_BACK = "ROLLED_BACK"
    FAILED = "FAILED"

    @property
    def in_progress(self) -> bool:
        return self in (DeploymentStatus.UPGRADING, DeploymentStatus.ROLLING_BACK)


class UpgradeMode(str, enum.Enum):
    """How a running job moves to a new spec (the Flink Kubernetes Operator's modes):
    `savepoint`: stop at a batch boundary with a savepoint, restore it (checkpoint mode);
    `last-state`: stop at a batch boundary, continue the checkpoint as it is;
    `stateless`: stop with a savepoint, start on fresh state from its Kafka offsets."""

    SAVEPOINT = "savepoint"
    LAST_STATE = "last-state"
    STATELESS = "stateless"

    @classmethod
    def parse(cls, value: str | UpgradeMode) -> UpgradeMode:
        try:
            return cls(value)
        except ValueError:
            raise InvalidArgumentError(
                f"upgrade_mode={value!r} is not one of {[m.value for m in cls]}"
            ) from None


@dataclass(frozen=True)
class SpecRecord:
    """One spec of the deployment: its hash, the spec itself (as given, without the
    connection's client settings) and the savepoint it stands on (restored from, or taken
    before it was replaced), if any."""

    spec_hash: str
    spec: dict[str, Any]
    savepoint_id: str | None = None
    recorded_at_ms: int = 0
    # python_path entry -> the name its code is kept under (lifecycle/deploy_code.py).
    code: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec_hash": self.spec_hash,
            "spec": self.spec,
            "savepoint_id": self.savepoint_id,
            "recorded_at_ms": self.recorded_at_ms,
            "code": self.code,
        }

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> SpecRecord:
        if not isinstance(raw, dict) or not isinstance(raw.get("spec"), dict):
            raise ControlFileError(f"{where}: expected a spec record object")
        try:
            return cls(
                spec_hash=str(raw["spec_hash"]),
                spec=dict(raw["spec"]),
                savepoint_id=None if raw.get("savepoint_id") is None else str(raw["savepoint_id"]),
                recorded_at_ms=int(raw.get("recorded_at_ms", 0)),
                code={str(k): str(v) for k, v in (raw.get("code") or {}).items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ControlFileError(f"{where}: bad spec record ({exc!r})") from None


@dataclass(frozen=True)
class Transition:
    at_ms: int
    status: DeploymentStatus
    reason: str
    by: str
    spec_hash: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "at_ms": self.at_ms,
            "status": self.status.value,
            "reason": self.reason,
            "by": self.by,
            "spec_hash": self.spec_hash,
        }

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> Transition:
        try:
            return cls(
                at_ms=int(raw["at_ms"]),
                status=DeploymentStatus(raw["status"]),
                reason=str(raw["reason"]),
                by=str(raw["by"]),
                spec_hash=None if raw.get("spec_hash") is None else str(raw["spec_hash"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ControlFileError(f"{where}: bad history entry ({exc!r})") from None


@dataclass(frozen=True)
class Deployment:
    job_name: str
    status: DeploymentStatus
    upgrade_mode: UpgradeMode
    desired: SpecRecord | None = None
    stable: SpecRecord | None = None
    # Who holds an upgrade or a rollback in progress; None otherwise.
    holder: str | None = None
    updated_at_ms: int = 0
    history: tuple[Transition, ...] = field(default_factory=tuple)

    def moved(
        self, status: DeploymentStatus, reason: str, *, by: str, at_ms: int, **changes: Any
    ) -> Deployment:
        """The record after a transition to `status`, the transition appended to a history
        kept to its last `MAX_HISTORY` entries. `holder` is `by` while the new status is in
        progress, else cleared."""
        changed = replace(self, **changes)
        desired = changed.desired.spec_hash if changed.desired else None
        entry = Transition(at_ms, status, reason, by, desired)
        return replace(
            changed,
            status=status,
            holder=by if status.in_progress else None,
            updated_at_ms=at_ms,
            history=(*self.history, entry)[-MAX_HISTORY:],
        )

    def describe(self) -> str:
        stable = self.stable.spec_hash[:12] if self.stable else "none"
        desired = self.desired.spec_hash[:12] if self.desired else "none"
        held = f", held by {self.holder}" if self.holder else ""
        return f"{self.job_name}: {self.status.value} (desired {desired}, stable {stable}{held})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "job_name": self.job_name,
            "status": self.status.value,
            "upgrade_mode": self.upgrade_mode.value,
            "desired": self.desired.to_dict() if self.desired else None,
            "stable": self.stable.to_dict() if self.stable else None,
            "holder": self.holder,
            "updated_at_ms": self.updated_at_ms,
            "history": [t.to_dict() for t in self.history],
        }

    def summary(self) -> dict[str, Any]:
        """The small form for XCom and `deploy status`: no specs, the last transitions."""
        return {
            "job_name": self.job_name,
            "status": self.status.value,
            "upgrade_mode": self.upgrade_mode.value,
            "desired_hash": self.desired.spec_hash if self.desired else None,
            "desired_savepoint": self.desired.savepoint_id if self.desired else None,
            "stable_hash": self.stable.spec_hash if self.stable else None,
            "stable_savepoint": self.stable.savepoint_id if self.stable else None,
            "holder": self.holder,
            "updated_at_ms": self.updated_at_ms,
            "history": [t.to_dict() for t in self.history[-10:]],
        }

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> Deployment:
        if not isinstance(raw, dict):
            raise ControlFileError(f"{where}: not a JSON object")
        if raw.get("format_version") != FORMAT_VERSION:
            raise ControlFileError(
                f"{where}: format {raw.get('format_version')!r} is not {FORMAT_VERSION}"
            )
        try:
            history = raw.get("history") or []
            return cls(
                job_name=str(raw["job_name"]),
                status=DeploymentStatus(raw["status"]),
                upgrade_mode=UpgradeMode(raw["upgrade_mode"]),
                desired=None
                if raw.get("desired") is None
                else SpecRecord.from_dict(raw["desired"], f"{where}: desired"),
                stable=None
                if raw.get("stable") is None
                else SpecRecord.from_dict(raw["stable"], f"{where}: stable"),
                holder=None if raw.get("holder") is None else str(raw["holder"]),
                updated_at_ms=int(raw.get("updated_at_ms", 0)),
                history=tuple(Transition.from_dict(t, f"{where}: history") for t in history),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ControlFileError(f"{where}: bad field ({exc!r})") from None
