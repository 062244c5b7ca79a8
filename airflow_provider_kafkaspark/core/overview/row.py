"""One row of the jobs view, decided from `JobFacts` (pure): the job's state, who holds its
lease, where its driver runs, its last batch and that batch's age, lag per topic, the last
batches' duration and input rate, its latest savepoints and its last stop.

Lag is counted, like the health rules count it, over the partitions the checkpoint has
committed; when Kafka did not answer it is unknown (None), never 0. Ages come from the
storage's clock (how long ago it wrote the latest commit), so a driver's clock that runs
ahead or behind this server's does not make a live job look stale."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from airflow_provider_kafkaspark.core.control.requests import start_pending
from airflow_provider_kafkaspark.core.kafka.offsets import records_by_topic
from airflow_provider_kafkaspark.core.overview.facts import JobFacts, SavepointFacts

# Batches of the chart: the driver keeps its last `progress_batches` (20 by default).
CHART_BATCHES = 20
SAVEPOINTS_SHOWN = 5
HISTORY_SHOWN = 10

RUNNING = "running"
STARTING = "starting"
STOPPED = "stopped"
FAILED = "failed"
LOST = "lost"
NOT_STARTED = "not started"
UNREADABLE = "unreadable"
STATES = (RUNNING, STARTING, STOPPED, FAILED, LOST, NOT_STARTED, UNREADABLE)


@dataclass(frozen=True)
class BatchPoint:
    batch_id: int
    duration_ms: int | None
    input_rows_per_second: float
    num_input_rows: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "batch_id": self.batch_id,
            "duration_ms": self.duration_ms,
            "input_rows_per_second": self.input_rows_per_second,
            "num_input_rows": self.num_input_rows,
        }


@dataclass(frozen=True)
class JobRow:
    job_name: str
    checkpoint: str
    dag_id: str
    task_id: str
    run_id: str
    state: str
    state_reason: str
    deployment_status: str | None
    lease_holder: str | None
    lease_age_s: float | None
    backend: str | None
    application_id: str | None
    last_committed_batch: int | None
    last_planned_batch: int | None
    last_batch_age_s: float | None
    lag: dict[str, int] | None
    lag_total: int | None
    lag_unknown_reason: str | None
    batches: tuple[BatchPoint, ...]
    savepoints: tuple[SavepointFacts, ...]
    stop: dict[str, Any] | None
    problems: tuple[str, ...]
    observed_at: str
    # The deployment's last transitions, newest last (empty for a job never deployed).
    history: tuple[dict[str, Any], ...] = ()

    @property
    def last_batch_duration_ms(self) -> int | None:
        return self.batches[-1].duration_ms if self.batches else None

    @property
    def input_rows_per_second(self) -> float | None:
        return self.batches[-1].input_rows_per_second if self.batches else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_name": self.job_name,
            "checkpoint": self.checkpoint,
            "dag_id": self.dag_id,
            "task_id": self.task_id,
            "run_id": self.run_id,
            "state": self.state,
            "state_reason": self.state_reason,
            "deployment_status": self.deployment_status,
            "lease_holder": self.lease_holder,
            "lease_age_s": self.lease_age_s,
            "backend": self.backend,
            "application_id": self.application_id,
            "last_committed_batch": self.last_committed_batch,
            "last_planned_batch": self.last_planned_batch,
            "last_batch_age_s": self.last_batch_age_s,
            "last_batch_duration_ms": self.last_batch_duration_ms,
            "input_rows_per_second": self.input_rows_per_second,
            "lag": self.lag,
            "lag_total": self.lag_total,
            "lag_unknown_reason": self.lag_unknown_reason,
            "batches": [b.to_dict() for b in self.batches],
            "savepoints": [savepoint_dict(s) for s in self.savepoints],
            "stop": self.stop,
            "problems": list(self.problems),
            "observed_at": self.observed_at,
            "history": list(self.history),
        }


def job_row(facts: JobFacts) -> JobRow:
    job = facts.job
    state, reason = job_state(facts)
    lag, unknown = lag_by_topic(facts)
    ref = job.job_ref or {}
    lease = facts.lease
    return JobRow(
        job_name=job.job_name,
        checkpoint=job.checkpoint,
        dag_id=job.dag_id,
        task_id=job.task_id,
        run_id=job.run_id,
        state=state,
        state_reason=reason,
        deployment_status=None if facts.deployment is None else facts.deployment.status.value,
        lease_holder=None if lease is None else lease.describe(),
        lease_age_s=None if lease is None else round(lease.age_ms(facts.observed_at_ms) / 1000, 1),
        backend=describe_job_ref(ref) if ref else None,
        application_id=ref.get("application_id") or (lease.application_id if lease else None),
        last_committed_batch=facts.latest_committed,
        last_planned_batch=facts.latest_planned,
        last_batch_age_s=None if facts.commit_age_ms is None else facts.commit_age_ms / 1000,
        lag=lag,
        lag_total=None if lag is None else sum(lag.values()),
        lag_unknown_reason=unknown,
        batches=batch_points(facts),
        savepoints=facts.savepoints[:SAVEPOINTS_SHOWN],
        stop=stop_summary(facts),
        problems=(
            *(f"{what}: {message}" for what, message in facts.problems),
            *lag_commit_problem(facts, state),
        ),
        observed_at=iso_utc(facts.observed_at_ms),
        history=deployment_history(facts),
    )


def job_state(facts: JobFacts) -> tuple[str, str]:
    """The job's state and why, from its control folder."""
    unreadable = facts.problem("control folder")
    if unreadable is not None:
        return UNREADABLE, unreadable
    lease, stopped, at = facts.lease, facts.stopped, facts.observed_at_ms
    answered = (
        stopped is not None
        and lease is not None
        and stopped.owner_id is not None
        and stopped.owner_id == lease.owner_id
    )
    if lease is not None and lease.is_fresh(at) and not answered:
        return RUNNING, f"{lease.describe()} holds the lease"
    if start_pending(facts.submitted, lease, stopped, at):
        marker = facts.submitted
        assert marker is not None
        return STARTING, f"submitted by {marker.submitted_by}; no driver holds the lease yet"
    if stopped is not None and (lease is None or answered or not lease.is_fresh(at)):
        failed = not stopped.clean or stopped.exit_code not in (None, 0)
        return (FAILED if failed else STOPPED), stopped.describe()
    if lease is not None:
        return LOST, f"the lease of {lease.describe()} expired without a stopped report"
    return NOT_STARTED, "no driver has taken the checkpoint's lease"


def lag_by_topic(facts: JobFacts) -> tuple[dict[str, int] | None, str | None]:
    """Records waiting per topic over the committed partitions, or (None, why unknown)."""
    kafka = facts.problem("kafka")
    if kafka is not None:
        return None, kafka
    if facts.latest_committed is None or not facts.committed_offsets:
        return None, "no batch committed yet"
    if facts.end_offsets is None:
        return None, "Kafka was not asked"
    return records_by_topic(facts.committed_offsets, facts.end_offsets), None


def lag_commit_problem(facts: JobFacts, state: str) -> tuple[str, ...]:
    """The running driver's lag commits failing, as its progress file says: the lag group
    (what Kafka's tools and lag alerts read) then lags behind the job."""
    failing = None if facts.progress is None else facts.progress.lag_commits_failing()
    return (failing,) if failing is not None and state == RUNNING else ()


def batch_points(facts: JobFacts) -> tuple[BatchPoint, ...]:
    progress = facts.progress
    if progress is None:
        return ()
    points = [
        BatchPoint(
            batch_id=b.batch_id,
            duration_ms=b.duration_ms.get("triggerExecution"),
            input_rows_per_second=round(b.input_rows_per_second, 1),
            num_input_rows=b.num_input_rows,
        )
        for b in progress.batches
    ]
    return tuple(sorted(points, key=lambda p: p.batch_id)[-CHART_BATCHES:])


def deployment_history(facts: JobFacts) -> tuple[dict[str, Any], ...]:
    if facts.deployment is None:
        return ()
    return tuple(
        {**t.to_dict(), "at": iso_utc(t.at_ms)} for t in facts.deployment.history[-HISTORY_SHOWN:]
    )


def stop_summary(facts: JobFacts) -> dict[str, Any] | None:
    stopped = facts.stopped
    if stopped is None:
        return None
    return {
        "at": iso_utc(stopped.stopped_at_ms),
        "reason": stopped.reason,
        "clean": stopped.clean,
        "last_committed_batch": stopped.last_committed_batch,
        "exit_code": stopped.exit_code,
        "requested_by": stopped.requested_by,
        "message": stopped.message,
    }


def savepoint_dict(savepoint: SavepointFacts) -> dict[str, Any]:
    return {
        "savepoint_id": savepoint.savepoint_id,
        "created_at": savepoint.created_at,
        "bytes": savepoint.bytes,
        "files": savepoint.files,
        "last_committed_batch": savepoint.last_committed_batch,
        "status": savepoint_status(savepoint),
        "in_use": savepoint.in_use,
    }


def savepoint_status(savepoint: SavepointFacts) -> str:
    if savepoint.sealed is None:
        return "not checked"
    return "sealed" if savepoint.sealed else "manifest changed"


def describe_job_ref(ref: dict[str, Any]) -> str:
    """Where the driver runs, from a job reference's plain form (`job_ref_to_dict`)."""
    backend = ref.get("backend")
    if backend == "yarn":
        return f"YARN application {ref.get('application_id')} at {ref.get('resource_manager')}"
    if backend == "kubernetes":
        return f"Kubernetes Job {ref.get('namespace')}/{ref.get('name')}"
    return f"{backend or 'local'} driver pid {ref.get('pid')} on {ref.get('host')}"


def iso_utc(at_ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at_ms / 1000))
