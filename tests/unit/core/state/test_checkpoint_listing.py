"""A driver's batch that is planned and committed while the reader lists the checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader

META = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1_700_000_000_000, "conf": {}})


def _write_batch(root: Path, batch: int) -> None:
    """As Spark does: the batch's offsets when it starts, its commit when it ends."""
    offsets = {"t": {"0": (batch + 1) * 10}}
    (root / "offsets" / str(batch)).write_text(f"v1\n{META}\n{json.dumps(offsets)}")
    (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def _checkpoint(tmp_path: Path) -> Path:
    root = tmp_path / "checkpoint"
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text(json.dumps({"id": "q"}))
    _write_batch(root, 0)
    return root


def test_a_batch_run_between_the_two_listings_is_not_a_commit_without_offsets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _checkpoint(tmp_path)
    reader = CheckpointReader(str(root))
    listed = CheckpointReader._batch_ids

    def then_a_batch_runs(self: CheckpointReader, folder: str) -> list[int]:
        ids = listed(self, folder)
        if not (root / "commits" / "1").exists():
            _write_batch(root, 1)  # right after the first listing
        return ids

    monkeypatch.setattr(CheckpointReader, "_batch_ids", then_a_batch_runs)
    position = reader.position()
    assert (position.latest_committed, position.latest_planned) == (0, 1)
    assert reader.validate() == []
