"""Which restore backups retention disposes (pure), and the adapter that touches nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.state.backups import (
    RestoreBackups,
    backup_stamp_ms,
    select_backups,
)
from airflow_provider_kafkaspark.core.state.savepoint import RetentionPolicy
from airflow_provider_kafkaspark.errors import StorageError

HOUR_MS = 3_600_000
# 2026-11-27T00:00:00Z
BASE_MS = 1_795_737_600_000


def backup_folder(path: Path) -> None:
    (path / "commits").mkdir(parents=True)
    (path / "commits" / "0").write_text("v1")


def name(hour: int, checkpoint: str = "checkpoint") -> str:
    return f"{checkpoint}.backup-20261127T{hour:02d}0000123456Z"


def test_the_stamp_is_read_from_the_exact_backup_name() -> None:
    assert backup_stamp_ms("checkpoint", name(1)) == BASE_MS + HOUR_MS + 123
    for other in (
        "checkpoint",
        "checkpoint.backup-",
        "checkpoint.backup-20261127T010000Z",  # no microseconds
        "checkpoint.backup-20261127T010000123456Z.tmp",
        "checkpoint.backup-20261399T010000123456Z",  # no such day
        "checkpoint2.backup-20261127T010000123456Z",
        "xcheckpoint.backup-20261127T010000123456Z",
        "checkpoint.backup-20261127T010000123456Z/x",
    ):
        assert backup_stamp_ms("checkpoint", other) is None, other


def test_beyond_max_count_newest_first() -> None:
    names = [name(h) for h in range(1, 6)] + ["checkpoint", "savepoints", "notes.txt"]
    decision = select_backups("checkpoint", names, RetentionPolicy(max_count=2), BASE_MS)
    assert decision.kept == (name(5), name(4))
    assert decision.disposed == (name(3), name(2), name(1))
    # What is not a backup of this checkpoint is not even mentioned.
    assert set(decision.reasons) == {name(h) for h in range(1, 6)}


def test_older_than_max_age_but_never_the_newest() -> None:
    names = [name(h) for h in (1, 2, 3)]
    now = BASE_MS + 10 * HOUR_MS
    decision = select_backups("checkpoint", names, RetentionPolicy(max_age_s=8.5 * 3600), now)
    assert decision.disposed == (name(1),)
    decision = select_backups("checkpoint", names, RetentionPolicy(max_age_s=60), now)
    assert decision.kept == (name(3),)
    assert decision.reasons[name(3)] == "newest backup"
    assert decision.disposed == (name(2), name(1))


def test_no_policy_disposes_nothing() -> None:
    decision = select_backups("checkpoint", [name(1), name(2)], RetentionPolicy(), BASE_MS)
    assert decision.disposed == ()


def test_the_adapter_deletes_only_backups(tmp_path: Path) -> None:
    (tmp_path / "checkpoint" / "commits").mkdir(parents=True)
    (tmp_path / "checkpoint" / "commits" / "0").write_text("v1")
    for h in (1, 2, 3):
        backup_folder(tmp_path / name(h))
    backup_folder(tmp_path / "checkpoint.backup-mine")
    backup_folder(tmp_path / name(1, "other"))
    backups = RestoreBackups(str(tmp_path / "checkpoint"))
    assert backups.names() == [name(1), name(2), name(3)]
    decision = backups.prune(RetentionPolicy(max_count=1), now_ms=BASE_MS)
    assert decision.disposed == (name(2), name(1))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["checkpoint", name(3), "checkpoint.backup-mine", name(1, "other")]
    )
    assert (tmp_path / "checkpoint" / "commits" / "0").read_text() == "v1"
    with pytest.raises(StorageError, match="not one of its restore backups"):
        backups.dispose("checkpoint")
    with pytest.raises(StorageError, match="not one of its restore backups"):
        backups.dispose("checkpoint.backup-mine")


def test_a_trailing_slash_names_the_same_checkpoint(tmp_path: Path) -> None:
    backup_folder(tmp_path / name(1))
    assert RestoreBackups(str(tmp_path / "checkpoint") + "/").names() == [name(1)]


def test_an_emptied_backup_folder_is_no_backup(tmp_path: Path) -> None:
    # What an object store that keeps emptied folders lists after a dispose.
    (tmp_path / name(1)).mkdir()
    backup_folder(tmp_path / name(2))
    assert RestoreBackups(str(tmp_path / "checkpoint")).names() == [name(2)]
