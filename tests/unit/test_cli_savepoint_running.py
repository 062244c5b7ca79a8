"""`kafkaspark savepoint create --running` with retention after it, and `prune --keep`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.cli import main
from airflow_provider_kafkaspark.core.state.savepoint import KEPT_LAST_STABLE
from tests.unit.core.state.test_running_copy import running_checkpoint


def test_create_running_then_prune_keeping_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = str(running_checkpoint(tmp_path / "cp", committed=1, planned=2))
    root = str(tmp_path / "sp")
    create = ["savepoint", "--root", root, "create", checkpoint, "--job", "j", "--running"]
    assert main([*create, "--id", "j-first", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["of_running"] is True and first["last_committed_batch"] == 1
    for n in (2, 3):
        assert (
            main([*create, "--id", f"j-{n}", "--max-count", "1", "--keep", "j-first", "--json"])
            == 0
        )
        made = json.loads(capsys.readouterr().out)
        assert made["retention"]["savepoints"]["disposed"] == ([] if n == 2 else ["j-2"])
    assert sorted(p.name for p in (tmp_path / "sp").iterdir()) == ["j-3", "j-first"]
    assert (
        main(
            [
                "savepoint",
                "--root",
                root,
                "prune",
                "--max-count",
                "1",
                "--keep",
                "j-first",
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["disposed"] == []
    assert result["reasons"]["j-first"].startswith(KEPT_LAST_STABLE)
