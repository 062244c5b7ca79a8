"""Retention after a savepoint, on local disk and on the real S3 server: the newest savepoints
the policy allows and the one a deployment keeps stay, the rest go; restore backups beyond
the policy go, the newest backup, the checkpoint and anything else beside it stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.state.backups import RestoreBackups
from airflow_provider_kafkaspark.core.state.restore import move_aside
from airflow_provider_kafkaspark.core.state.savepoint import (
    KEPT_LAST_STABLE,
    RetentionPolicy,
    SavepointStore,
)
from airflow_provider_kafkaspark.core.storage.location import open_location
from airflow_provider_kafkaspark.lifecycle.retention import apply_retention
from tests.unit.core.state.savepoint_fakes import fake_savepoint


@pytest.mark.parametrize("storage", ["local", "s3"])
def test_retention_keeps_the_newest_and_the_kept_and_old_backups_go(
    tmp_path: Path, request: pytest.FixtureRequest, storage: str
) -> None:
    base = str(tmp_path) if storage == "local" else str(request.getfixturevalue("s3_url"))
    store = SavepointStore(f"{base}/savepoints")
    ids = [f"job-{i}" for i in range(5)]  # oldest first
    for i, sid in enumerate(ids):
        fake_savepoint(store, sid, created_at_ms=i + 1)
    # Another job's savepoint under the same root is not this job's retention's business.
    fake_savepoint(store, "other-0", created_at_ms=0, job_name="other")

    checkpoint = open_location(f"{base}/checkpoint")
    backups = []
    for n in range(3):  # three restores, each moving the checkpoint of its time aside
        checkpoint.write_atomic(f"run {n}", "commits", "0")
        backups.append(move_aside(checkpoint).url.rsplit("/", 1)[1])
    checkpoint.write_atomic("run 3", "commits", "0")
    parent = open_location(base)
    parent.write_atomic("not a backup", "checkpoint.backup-notes", "x")

    summary = apply_retention(
        f"{base}/savepoints",
        "job",
        checkpoint.url,
        RetentionPolicy(max_count=2),
        keep=frozenset({ids[1]}),
    )
    assert set(summary["savepoints"]["kept"]) == {ids[1], ids[3], ids[4]}
    assert set(summary["savepoints"]["disposed"]) == {ids[0], ids[2]}
    assert summary["savepoints"]["reasons"][ids[1]].startswith(KEPT_LAST_STABLE)
    assert {m.savepoint_id for m in store.list()} == {ids[1], ids[3], ids[4], "other-0"}
    assert summary["backups"]["disposed"] == [backups[0]]
    assert sorted(RestoreBackups(checkpoint.url).names()) == sorted(backups[1:])
    assert checkpoint.read_text("commits", "0") == "run 3"
    assert open_location(f"{base}/{backups[2]}").read_text("commits", "0") == "run 2"
    assert parent.read_text("checkpoint.backup-notes", "x") == "not a backup"
