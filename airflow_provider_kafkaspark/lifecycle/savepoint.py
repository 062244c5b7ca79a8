"""A periodic savepoint: a copy of a running job's checkpoint as of its last committed batch,
taken without stopping it (`core/state/running_copy.py`), then retention
(`lifecycle/retention.py`). The same for the savepoint operator and the CLI."""

from __future__ import annotations

from typing import Any

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.state.savepoint import (
    RetentionPolicy,
    SavepointManifest,
    SavepointStore,
)
from airflow_provider_kafkaspark.lifecycle.retention import apply_retention


def written_by_spark(checkpoint: str) -> str | None:
    """The Spark version of the driver that last wrote `checkpoint` (its control folder's
    `written-by.json`); None when it does not say."""
    written_by = ControlFolder(checkpoint).read_written_by()
    return written_by.spark_version if written_by is not None else None


def savepoint_of_running(
    checkpoint: str,
    savepoint_root: str,
    job_name: str,
    *,
    policy: RetentionPolicy | None = None,
    keep: frozenset[str] = frozenset(),
    savepoint_id: str | None = None,
) -> tuple[SavepointManifest, dict[str, Any] | None]:
    """A savepoint of the (running or stopped) job at its last committed batch, and the
    summary of the retention applied after it (None without a policy). Raises
    `NothingCommittedError` before the job's first committed batch."""
    manifest = SavepointStore(savepoint_root).create(
        checkpoint,
        job_name=job_name,
        of_running=True,
        spark_version=written_by_spark(checkpoint),
        savepoint_id=savepoint_id,
    )
    retention = None
    if policy is not None:
        # The new savepoint is the newest and verifies: retention keeps it.
        retention = apply_retention(savepoint_root, job_name, checkpoint, policy, keep)
    return manifest, retention
