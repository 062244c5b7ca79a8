"""What is observed of one known job: the facts a row of the jobs view is built from.

`KnownJob` is what Airflow knows of a job (the newest submit or deploy task that returned its
handle); `JobFacts` what one look at its control folder, checkpoint, savepoints and Kafka
found. A source that could not be read leaves its facts empty and says why in `problems`,
so that one unreadable job never hides the others."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.core.control.reports import ProgressFile, StoppedReport
from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker
from airflow_provider_kafkaspark.core.deploy.deployment import Deployment
from airflow_provider_kafkaspark.core.kafka.offsets import TopicOffsets


@dataclass(frozen=True)
class TaskRecord:
    """An Airflow task instance that acted on the job (submit, deploy, stop, savepoint)."""

    dag_id: str
    run_id: str
    task_id: str
    operator: str
    at: str  # when its result was written, ISO 8601 (the metadata database's clock)
    summary: str = ""


@dataclass(frozen=True)
class KnownJob:
    """A job as Airflow knows it: its names and the connections its tasks used. Connection
    ids only, never what they hold."""

    job_name: str
    checkpoint: str
    dag_id: str
    task_id: str
    run_id: str
    submitted_at: str
    job_ref: dict[str, Any] | None = None
    kafka_conn_id: str | None = None
    aws_conn_id: str | None = None
    savepoint_root: str | None = None
    tasks: tuple[TaskRecord, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.job_name, self.checkpoint)


@dataclass(frozen=True)
class SavepointFacts:
    savepoint_id: str
    created_at: str
    created_at_ms: int
    bytes: int
    files: int
    last_committed_batch: int | None
    # The manifest still matches the digest sealed at its completion (None: not checked).
    sealed: bool | None
    in_use: bool


@dataclass(frozen=True)
class JobFacts:
    job: KnownJob
    # This server's clock at the look; shown, never compared with another host's times.
    observed_at_ms: int
    lease: Lease | None = None
    stopped: StoppedReport | None = None
    submitted: SubmittedMarker | None = None
    deployment: Deployment | None = None
    progress: ProgressFile | None = None
    checkpoint_exists: bool = False
    latest_planned: int | None = None
    latest_committed: int | None = None
    committed_offsets: TopicOffsets = field(default_factory=dict)
    # How long ago the latest commit was written, by the storage's own clock.
    commit_age_ms: int | None = None
    # Kafka's end offsets of the committed partitions; None when Kafka was not asked or
    # did not answer (lag unknown, never 0).
    end_offsets: TopicOffsets | None = None
    savepoints: tuple[SavepointFacts, ...] = ()
    # (source, message) of each source that could not be read.
    problems: tuple[tuple[str, str], ...] = ()

    def problem(self, source: str) -> str | None:
        return next((message for what, message in self.problems if what == source), None)
