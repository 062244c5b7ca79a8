"""apply_retention: savepoints and restore backups in one pass, one JSON-able summary."""

from __future__ import annotations

import json
from pathlib import Path

from airflow_provider_kafkaspark.core.state.savepoint import (
    KEPT_LAST_STABLE,
    RetentionPolicy,
    SavepointStore,
)
from airflow_provider_kafkaspark.lifecycle.retention import apply_retention
from tests.unit.core.state.savepoint_fakes import fake_savepoint


def test_savepoints_and_backups_in_one_summary(tmp_path: Path) -> None:
    store = SavepointStore(str(tmp_path / "sp"))
    ids = [f"job-{i}" for i in range(4)]
    for i, sid in enumerate(ids):
        fake_savepoint(store, sid, created_at_ms=i + 1)
    (tmp_path / "checkpoint").mkdir()
    backups = [f"checkpoint.backup-2026112{d}T000000000000Z" for d in (1, 2, 3)]
    for b in backups:
        (tmp_path / b).mkdir()
        (tmp_path / b / "metadata").write_text("{}")
    summary = apply_retention(
        str(tmp_path / "sp"),
        "job",
        str(tmp_path / "checkpoint"),
        RetentionPolicy(max_count=2),
        keep=frozenset({ids[0]}),
    )
    json.dumps(summary)  # JSON-able, for XCom
    assert set(summary["savepoints"]["kept"]) == {ids[0], ids[2], ids[3]}
    assert summary["savepoints"]["disposed"] == [ids[1]]
    assert summary["savepoints"]["reasons"][ids[0]].startswith(KEPT_LAST_STABLE)
    assert summary["backups"]["disposed"] == [backups[0]]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["sp", "checkpoint", backups[1], backups[2]]
    )


def test_without_a_checkpoint_only_savepoints(tmp_path: Path) -> None:
    store = SavepointStore(str(tmp_path / "sp"))
    fake_savepoint(store, "job-1", created_at_ms=1)
    summary = apply_retention(str(tmp_path / "sp"), "job", None, RetentionPolicy(max_count=1))
    assert summary["backups"] is None
    assert summary["savepoints"]["kept"] == ["job-1"]


def test_the_savepoints_a_deployment_stands_on_are_kept(tmp_path: Path) -> None:
    from airflow_provider_kafkaspark.core.deploy.deployment import (
        Deployment,
        DeploymentStatus,
        SpecRecord,
        UpgradeMode,
    )
    from airflow_provider_kafkaspark.core.deploy.record_file import DeploymentFile

    store = SavepointStore(str(tmp_path / "sp"))
    ids = [f"job-{i}" for i in range(4)]
    for i, sid in enumerate(ids):
        fake_savepoint(store, sid, created_at_ms=i + 1)
    checkpoint = str(tmp_path / "checkpoint")
    stable = SpecRecord("sha256:1", {}, savepoint_id=ids[0])
    DeploymentFile(checkpoint).write(
        Deployment("job", DeploymentStatus.STABLE, UpgradeMode.SAVEPOINT, stable, stable)
    )
    summary = apply_retention(str(tmp_path / "sp"), "job", checkpoint, RetentionPolicy(1))
    assert set(summary["savepoints"]["kept"]) == {ids[0], ids[3]}
    assert summary["savepoints"]["reasons"][ids[0]].startswith(KEPT_LAST_STABLE)
