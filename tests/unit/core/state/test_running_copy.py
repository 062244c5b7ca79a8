"""A savepoint of a running query: the copy as of its last committed batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.state.running_copy import purgeable, wanted_as_of
from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore
from airflow_provider_kafkaspark.errors import SavepointError

QUERY = "b37a4559-b7e5-48ab-b64e-f99ff2149f44"


def offsets_entry(offset: int) -> str:
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": {}}
    return "v1\n" + json.dumps(meta) + "\n" + json.dumps({"t": {"0": offset}})


def running_checkpoint(root: Path, *, committed: int, planned: int) -> Path:
    """A checkpoint whose driver has planned `planned` and committed up to `committed`, with
    the state versions each batch wrote (version = batch + 1), the planned one included."""
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "state/0/0").mkdir(parents=True)
    (root / "sources/0").mkdir(parents=True)
    (root / "metadata").write_text(json.dumps({"id": QUERY}))
    (root / "sources/0/0").write_text("v1\n{}")
    for batch in range(planned + 1):
        (root / "offsets" / str(batch)).write_text(offsets_entry(10 * (batch + 1)))
        (root / "state/0/0" / f"{batch + 1}.delta").write_bytes(b"state")
    for batch in range(committed + 1):
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    (root / "_kafkaspark").mkdir()
    (root / "_kafkaspark/lease.json").write_text("{}")
    return root


def test_a_copy_as_of_a_batch_leaves_out_what_later_batches_wrote() -> None:
    assert wanted_as_of("offsets/2", 2)
    assert not wanted_as_of("offsets/3", 2)
    assert not wanted_as_of("commits/.3.crc", 2)
    assert wanted_as_of("state/0/0/3.delta", 2)  # batch 2 wrote version 3
    assert not wanted_as_of("state/0/0/4.delta", 2)
    assert not wanted_as_of("state/0/0/.4.delta.crc", 2)
    assert wanted_as_of("state/0/_metadata/metadata", 2)
    assert wanted_as_of("sources/0/0", 2)
    assert not wanted_as_of("_kafkaspark/lease.json", 2)
    assert not wanted_as_of("offsets/.3.tmp", 2)
    # Files Spark is writing, and their checksums: renamed away under the copy.
    assert not wanted_as_of("state/0/0/.2.delta.b2d20f43.TID58.tmp", 2)
    assert not wanted_as_of("state/0/0/..2.delta.b2d20f43.TID58.tmp.crc", 2)
    assert not wanted_as_of("commits/..2.0b1c.tmp.crc", 2)


def test_only_files_older_than_the_batch_may_vanish_under_the_copy() -> None:
    assert purgeable("offsets/1", 2)
    assert not purgeable("offsets/2", 2)
    assert purgeable("state/0/0/2.delta", 2)
    assert not purgeable("state/0/0/3.delta", 2)
    assert not purgeable("metadata", 2)


def test_a_savepoint_of_a_running_query_stops_at_its_last_commit(tmp_path: Path) -> None:
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=2, planned=3)
    store = SavepointStore(str(tmp_path / "sp"))
    manifest = store.create(str(ckpt), job_name="clicks", of_running=True)
    assert manifest.of_running
    assert (manifest.last_committed_batch, manifest.last_planned_batch) == (2, 2)
    assert manifest.pending_batch is None
    assert manifest.offsets == {"t": {"0": 30}} == manifest.planned_offsets
    paths = {f.path for f in manifest.files}
    assert "offsets/3" not in paths and "state/0/0/4.delta" not in paths
    assert {"offsets/2", "commits/2", "state/0/0/3.delta", "metadata"} <= paths
    assert not any(p.startswith("_kafkaspark") for p in paths)
    assert store.verify(manifest.savepoint_id).ok
    assert store.show(manifest.savepoint_id).of_running


def test_a_running_query_without_a_commit_has_nothing_to_copy(tmp_path: Path) -> None:
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=-1, planned=0)
    with pytest.raises(SavepointError, match="no committed batch"):
        SavepointStore(str(tmp_path / "sp")).create(str(ckpt), job_name="c", of_running=True)
