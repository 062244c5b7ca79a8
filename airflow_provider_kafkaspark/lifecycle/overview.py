"""One look at a known job for the jobs view: its control files, checkpoint position and the
age of its latest commit, savepoints, and Kafka's end offsets. Reads only.

Each source is read on its own: one that fails (storage down, a corrupt file, Kafka not
answering) is named in the facts' `problems` and leaves the rest of the row intact. Errors
are the package's typed ones, whose messages carry no client settings."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.deploy.record_file import DeploymentFile
from airflow_provider_kafkaspark.core.kafka.offsets import TopicOffsets
from airflow_provider_kafkaspark.core.overview.facts import JobFacts, KnownJob, SavepointFacts
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore
from airflow_provider_kafkaspark.core.storage.conditional_files import conditional_files
from airflow_provider_kafkaspark.errors import KafkaSparkError

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade

log = logging.getLogger(__name__)
T = TypeVar("T")
# Savepoints whose manifests a look reads (the newest; the view shows five).
SAVEPOINTS_READ = 5


def observe_job(job: KnownJob, kafka: KafkaFacade | None) -> JobFacts:
    """What one look at `job` finds; `kafka` None leaves lag unknown ("Kafka was not asked")."""
    problems: list[tuple[str, str]] = []

    def attempt(source: str, read: Callable[[], T]) -> T | None:
        try:
            return read()
        except (KafkaSparkError, OSError) as exc:
            problems.append((source, _message(exc)))
            return None

    control = attempt("control folder", lambda: ControlFolder(job.checkpoint))
    lease = stopped = submitted = progress = None
    if control is not None:
        lease = attempt("control folder", control.read_lease)
        stopped = attempt("control folder", control.read_stopped)
        submitted = attempt("control folder", control.read_submitted)
        progress = attempt("progress", control.read_progress)
    deployment = attempt("deployment", lambda: DeploymentFile(job.checkpoint).read())
    reader = CheckpointReader(job.checkpoint)
    exists = attempt("checkpoint", reader.exists) or False
    position = attempt("checkpoint", reader.position) if exists else None
    commit_age_ms = None
    if position is not None and position.latest_committed is not None:
        latest = position.latest_committed
        commit_age_ms = attempt("checkpoint", lambda: _commit_age_ms(reader, latest))
    committed: TopicOffsets = position.committed_offsets if position is not None else {}
    end_offsets = None
    if kafka is not None and committed:
        end_offsets = attempt("kafka", lambda: _end_offsets(kafka, committed))
    savepoints: tuple[SavepointFacts, ...] = ()
    if job.savepoint_root:
        root = job.savepoint_root
        savepoints = attempt("savepoints", lambda: _savepoints(root, job.job_name)) or ()
    return JobFacts(
        job=job,
        observed_at_ms=now_ms(),
        lease=lease,
        stopped=stopped,
        submitted=submitted,
        deployment=deployment,
        progress=progress,
        checkpoint_exists=exists,
        latest_planned=None if position is None else position.latest_planned,
        latest_committed=None if position is None else position.latest_committed,
        committed_offsets=committed,
        commit_age_ms=commit_age_ms,
        end_offsets=end_offsets,
        savepoints=savepoints,
        problems=tuple(problems),
    )


def _commit_age_ms(reader: CheckpointReader, batch_id: int) -> int | None:
    """How long ago the storage wrote the commit of `batch_id`, by the storage's clock."""
    location = reader.location
    found = conditional_files(location).read(location.path("commits", str(batch_id)))
    return None if found is None else found.age_ms


def _end_offsets(kafka: KafkaFacade, committed: TopicOffsets) -> TopicOffsets:
    from airflow_provider_kafkaspark.core.kafka.offsets import TopicPartition, nest

    partitions = [TopicPartition(t, p) for t, parts in committed.items() for p in parts]
    return nest((tp, w.high) for tp, w in kafka.watermarks(partitions).items())


def _savepoints(root: str, job_name: str) -> tuple[SavepointFacts, ...]:
    store = SavepointStore(root)
    found = []
    for manifest in store.list(job_name)[:SAVEPOINTS_READ]:
        sid = manifest.savepoint_id
        found.append(
            SavepointFacts(
                savepoint_id=sid,
                created_at=manifest.created_at,
                created_at_ms=manifest.created_at_ms,
                bytes=manifest.total_bytes,
                files=len(manifest.files),
                last_committed_batch=manifest.last_committed_batch,
                sealed=store.sealed(sid),
                in_use=store.is_in_use(sid),
            )
        )
    return tuple(found)


def _message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
