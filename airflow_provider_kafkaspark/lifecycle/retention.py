"""Retention, applied after each new savepoint: the job's savepoints beyond the policy, and
the backups restores left beside its checkpoint (`<checkpoint>.backup-<stamp>`).

Protected whatever the policy says: the newest savepoint that verifies, savepoints marked in
use (by a person, or by a restore running from one), those in `keep`, the savepoints the
job's deployment stands on (its stable and desired specs', from `deployment.json`), and the
newest restore backup."""

from __future__ import annotations

from typing import Any

from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.state.backups import RestoreBackups
from airflow_provider_kafkaspark.core.state.savepoint import RetentionPolicy, SavepointStore


def deployment_savepoints(checkpoint: str) -> frozenset[str]:
    """The savepoints the deployment on `checkpoint` stands on: never pruned."""
    from airflow_provider_kafkaspark.core.deploy.record_file import DeploymentFile

    deployment = DeploymentFile(checkpoint).read()
    if deployment is None:
        return frozenset()
    records = (deployment.stable, deployment.desired)
    return frozenset(r.savepoint_id for r in records if r is not None and r.savepoint_id)


def apply_retention(
    savepoint_root: str,
    job_name: str,
    checkpoint: str | None,
    policy: RetentionPolicy,
    keep: frozenset[str] = frozenset(),
    *,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Dispose what `policy` does not cover, of `job_name`'s savepoints under
    `savepoint_root` and of the restore backups beside `checkpoint` (None: savepoints only).
    Returns a JSON-able summary: for each, what was kept, what disposed, and why."""
    at_ms = now_ms()
    if checkpoint is not None:
        keep = keep | deployment_savepoints(checkpoint)
    store = SavepointStore(savepoint_root)
    savepoints = store.prune(policy, job_name=job_name, dry_run=dry_run, at_ms=at_ms, keep=keep)
    summary: dict[str, Any] = {
        "job_name": job_name,
        "policy": {"max_count": policy.max_count, "max_age_s": policy.max_age_s},
        "dry_run": dry_run,
        "savepoints": savepoints.to_dict(),
        "backups": None,
    }
    if checkpoint is not None:
        backups = RestoreBackups(checkpoint).prune(policy, now_ms=at_ms, dry_run=dry_run)
        summary["backups"] = backups.to_dict()
    return summary
