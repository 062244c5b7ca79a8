"""Which jobs Airflow knows, from the results its tasks returned (pure).

The submit, restore and deploy operators return the job's handle (job name, checkpoint, job
reference, and the ids of the connections they used); stop and savepoint operators return the
job name and where its savepoints went. The newest result per job (name and checkpoint) says
where to look; results of other shapes are skipped."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from airflow_provider_kafkaspark.core.overview.facts import KnownJob, TaskRecord

SUBMITTING_OPERATORS = (
    "SubmitStreamingJobOperator",
    "RestoreStreamingJobOperator",
    "DeployStreamingJobOperator",
)
SAVEPOINTING_OPERATORS = ("StopStreamingJobOperator", "SavepointStreamingJobOperator")
OPERATORS = SUBMITTING_OPERATORS + SAVEPOINTING_OPERATORS
# Task instances listed on a job's page.
TASKS_KEPT = 20


@dataclass(frozen=True)
class TaskResult:
    """One task instance's returned value, as the metadata database holds it."""

    dag_id: str
    run_id: str
    task_id: str
    operator: str
    at: str  # ISO 8601
    value: Any


def known_jobs(results: Iterable[TaskResult]) -> list[KnownJob]:
    """The jobs the results name, newest submit first, each with its task history."""
    ordered = sorted(results, key=lambda r: r.at, reverse=True)
    jobs: dict[tuple[str, str], KnownJob] = {}
    roots: dict[str, str] = {}
    tasks: dict[str, list[TaskRecord]] = {}
    for result in ordered:
        value = result.value
        if not isinstance(value, Mapping):
            continue
        job_name = value.get("job_name")
        if not isinstance(job_name, str) or not job_name:
            continue
        record = TaskRecord(
            result.dag_id,
            result.run_id,
            result.task_id,
            result.operator,
            result.at,
            _summary(result.operator, value),
        )
        tasks.setdefault(job_name, []).append(record)
        root = value.get("savepoint_root")
        if isinstance(root, str) and root and job_name not in roots:
            roots[job_name] = root
        job = _submitted_job(result, value, job_name)
        if job is not None and job.key not in jobs:
            jobs[job.key] = job
    return [
        replace(
            job,
            savepoint_root=job.savepoint_root or roots.get(job.job_name),
            tasks=tuple(tasks.get(job.job_name, ())[:TASKS_KEPT]),
        )
        for job in jobs.values()
    ]


def _submitted_job(result: TaskResult, value: Mapping[str, Any], job_name: str) -> KnownJob | None:
    if result.operator not in SUBMITTING_OPERATORS:
        return None
    # A deploy returns the submit's handle inside its result (None when nothing changed).
    handle = value.get("handle") if "handle" in value else value
    source = handle if isinstance(handle, Mapping) else value
    checkpoint = source.get("checkpoint") or value.get("checkpoint")
    if not isinstance(checkpoint, str) or not checkpoint:
        return None
    ref = source.get("job_ref")
    connections = value.get("connections") or source.get("connections") or {}
    if not isinstance(connections, Mapping):
        connections = {}
    root = value.get("savepoint_root")
    return KnownJob(
        job_name=job_name,
        checkpoint=checkpoint,
        dag_id=result.dag_id,
        task_id=result.task_id,
        run_id=result.run_id,
        submitted_at=result.at,
        job_ref=dict(ref) if isinstance(ref, Mapping) else None,
        kafka_conn_id=_text(connections.get("kafka_conn_id")),
        aws_conn_id=_text(connections.get("aws_conn_id")),
        savepoint_root=_text(root),
    )


def _summary(operator: str, value: Mapping[str, Any]) -> str:
    if "action" in value:
        return f"deploy: {value.get('action')} ({value.get('status')})"
    if operator in SAVEPOINTING_OPERATORS:
        sid = value.get("savepoint_id")
        return f"savepoint {sid}" if sid else "stopped without a savepoint"
    since = value.get("since_batch")
    if since is None:
        return "submitted on a checkpoint with no batch committed"
    return f"submitted after batch {since}"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
