"""What every deployment backend does: submit a job and return its reference, say whether
its driver is alive, and kill it. A graceful stop is not a backend's: it is a request in the
job's checkpoint folder, which the driver honours wherever it runs (lifecycle/stop.begin_stop)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef
from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.spec.secret_env import split_secrets


@dataclass(frozen=True)
class SubmitOptions:
    """What a submit needs beyond the job spec. `env` holds the driver's storage credentials
    (the standard AWS variables): kept out of `repr`, so out of logs."""

    workdir: str
    submitted_by: str = "kafkaspark"
    restart_policy: RestartPolicy | None = None
    env: dict[str, str] = field(default_factory=dict, repr=False)
    # Kept by the cluster manager with the driver where it can (`SubmitLookup`).
    submit_id: str | None = None


def shippable(spec: JobSpec, env: dict[str, str]) -> tuple[JobSpec, dict[str, str]]:
    """The spec a backend writes or ships, without its secrets, and the variables its driver
    gets through the backend's channel for secrets: `env` and the spec's secrets
    (`core/spec/secret_env.py`)."""
    shipped, secrets = split_secrets(spec)
    return shipped, {**env, **secrets}


@dataclass(frozen=True)
class Submitted:
    """A submit's result: the reference, and what a person looking at the task wants besides
    (the driver's log and spec file, its working folder): plain values, fit for XCom."""

    ref: JobRef
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JobStatus:
    """What a backend knows of a job's driver. `alive` is None when this host cannot tell
    (a local driver of another host): the lease in the checkpoint folder says then. `state` is
    in the backend's own words (`running`, `gone`, YARN's `RUNNING`, ...)."""

    job_name: str
    backend: str
    alive: bool | None
    state: str
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_name": self.job_name,
            "backend": self.backend,
            "alive": self.alive,
            "state": self.state,
            **self.detail,
        }


class JobBackend(Protocol):
    """One per cluster manager (local processes, a standalone cluster, YARN)."""

    name: str

    def submit(self, spec: JobSpec, options: SubmitOptions) -> Submitted:
        """Start the job's driver; return at once with where it runs."""
        ...

    def status(self, ref: JobRef) -> JobStatus:
        """Whether the driver `ref` names is alive, in the manager's terms."""
        ...

    def alive(self, ref: JobRef) -> bool | None:
        """`status(ref).alive`, asked as cheaply as the manager allows (a stop polls it)."""
        ...

    def force_kill(self, ref: JobRef) -> None:
        """Kill the driver `ref` names (Spark re-runs its batch in flight on restore); refuse
        with a typed error when `ref` is not this backend's or names another job."""
        ...


@runtime_checkable
class SubmitLookup(Protocol):
    """A backend whose cluster manager keeps a submit's id with the driver it started (a YARN
    application tag), so a retry can find a driver whose submit's host died before recording
    it. A submit through such a backend writes its marker before it asks the manager."""

    def find_submitted(self, spec: JobSpec, submit_id: str) -> JobRef | None:
        """The live driver of `spec`'s job started by the submit `submit_id`, or None."""
        ...


@runtime_checkable
class SubmitPreflight(Protocol):
    """A backend that starts drivers from this host, and so can tell before anything starts
    (or stops) whether a driver it starts would find what it needs here."""

    def check_submit(self, spec: JobSpec) -> None:
        """Raise a typed error naming what is missing (a setting, a folder, an artifact)."""
        ...


def preflight(backend: JobBackend, spec: JobSpec) -> None:
    """What must hold before `backend` starts a driver of `spec`, checked where the submit runs
    (`SubmitPreflight`); nothing for a backend whose drivers start elsewhere."""
    if isinstance(backend, SubmitPreflight):
        backend.check_submit(spec)


@dataclass(frozen=True)
class BatchResult:
    """How a bounded batch driver ended: its exit code and what it printed."""

    returncode: int
    stdout: str
    stderr: str


@runtime_checkable
class BatchBackend(Protocol):
    """A backend that also runs a bounded batch driver (a backfill) to its end."""

    name: str

    def run_batch(
        self, spec: JobSpec, module: str, args: Sequence[str], *, timeout_s: float
    ) -> BatchResult:
        """Run `python -m module --spec ... --master ... args` for `spec`; wait for its end."""
        ...
