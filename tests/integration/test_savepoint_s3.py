"""Savepoints, restore and the control folder on a real S3 server (SeaweedFS): the same
guarantees as on local disk, and a savepoint moves between the two. The checkpoints are
real Spark checkpoints (written on local disk by the session's queries)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.control.requests import StopRequest
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.core.state.restore import move_aside, restore
from airflow_provider_kafkaspark.core.state.savepoint import COMPLETE_FILE, SavepointStore
from airflow_provider_kafkaspark.core.storage.location import open_location
from airflow_provider_kafkaspark.errors import SavepointError
from tests.integration.spark_checkpoints import MadeCheckpoint


def test_a_local_checkpoint_savepointed_to_s3_restores_to_s3_and_back(
    made_checkpoints: dict[str, MadeCheckpoint], s3_url: str, tmp_path: Path
) -> None:
    made = made_checkpoints["stateful"]
    position = CheckpointReader(str(made.path)).position()
    store = SavepointStore(f"{s3_url}/savepoints")
    manifest = store.create(str(made.path), job_name="windowed")
    assert store.verify(manifest.savepoint_id).ok
    assert [m.savepoint_id for m in store.list()] == [manifest.savepoint_id]
    assert store.resolve("latest", "windowed") == manifest

    on_s3 = f"{s3_url}/restored"
    result = restore(store, manifest.savepoint_id, on_s3, "checkpoint")
    assert result.files == len(manifest.files)
    restored = CheckpointReader(on_s3).position()
    assert restored.query_id == position.query_id
    assert restored.committed_offsets == position.committed_offsets

    # ... and from S3 back to local disk, through a savepoint of the S3 checkpoint.
    back = SavepointStore(str(tmp_path / "savepoints")).create(on_s3, job_name="windowed")
    assert {(f.path, f.sha256) for f in back.files} == {(f.path, f.sha256) for f in manifest.files}


def test_restore_over_a_non_empty_s3_target_moves_it_aside(
    made_checkpoints: dict[str, MadeCheckpoint], s3_url: str
) -> None:
    store = SavepointStore(f"{s3_url}/savepoints")
    manifest = store.create(str(made_checkpoints["stateless"].path), job_name="j")
    target = open_location(f"{s3_url}/target")
    target.write_atomic("keep me", "precious")
    with pytest.raises(SavepointError, match="not empty"):
        restore(store, manifest.savepoint_id, target.url, "checkpoint")
    assert target.read_text("precious") == "keep me"
    result = restore(store, manifest.savepoint_id, target.url, "checkpoint", move_target_aside=True)
    assert result.backup is not None
    assert open_location(result.backup).read_text("precious") == "keep me"
    assert CheckpointReader(target.url).position().query_id == manifest.query_id


def test_a_checkpoint_moved_aside_on_s3_leaves_no_folder_markers(
    made_checkpoints: dict[str, MadeCheckpoint], s3_url: str
) -> None:
    # A checkpoint Spark wrote through S3A has empty `offsets/`-style folder markers. Left
    # behind by a move aside, they made the emptied location look like a started checkpoint
    # without metadata, and the next submit failed on it.
    store = SavepointStore(f"{s3_url}/savepoints")
    manifest = store.create(str(made_checkpoints["stateless"].path), job_name="j")
    target = open_location(f"{s3_url}/checkpoint")
    restore(store, manifest.savepoint_id, target.url, "checkpoint")
    for folder in ("offsets", "commits", "sources"):
        target.fs.pipe_file(target.path(folder) + "/", b"")
    assert len(target.folder_markers()) == 3
    backup = move_aside(target)
    assert target.folder_markers() == []
    assert not CheckpointReader(target.url).exists()
    assert CheckpointReader(backup.url).position().query_id == manifest.query_id


def test_an_incomplete_s3_savepoint_is_invisible(
    made_checkpoints: dict[str, MadeCheckpoint], s3_url: str
) -> None:
    store = SavepointStore(f"{s3_url}/savepoints")
    manifest = store.create(str(made_checkpoints["stateless"].path), job_name="j")
    root = open_location(f"{s3_url}/savepoints/{manifest.savepoint_id}")
    root.fs.rm(root.path(COMPLETE_FILE))  # as if the copy had crashed before the marker
    root.fs.invalidate_cache()
    assert store.list() == []
    with pytest.raises(SavepointError, match="incomplete"):
        store.show(manifest.savepoint_id)


def test_control_files_on_s3(s3_url: str) -> None:
    control = ControlFolder(f"{s3_url}/checkpoint")
    assert control.read_stop_request() is None
    control.request_stop(StopRequest(now_ms(), "test", "window"))
    request = control.read_stop_request()
    assert request is not None and request.reason == "window"
    control.clear_stop_request()
    assert control.read_stop_request() is None


WRITE_STOP_REQUEST = """
import sys
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.requests import StopRequest
from airflow_provider_kafkaspark.core.control.lease import now_ms
ControlFolder(sys.argv[1]).request_stop(StopRequest(now_ms(), "another host", "window"))
"""


def test_a_reader_that_listed_the_folder_sees_a_file_another_process_wrote(s3_url: str) -> None:
    """A sensor polls the control folder from one long-lived process; the driver writes
    from another. No cached S3 listing may hide the new file."""
    checkpoint = f"{s3_url}/polled"
    control = ControlFolder(checkpoint)
    control.location.write_atomic("{}", "progress.json")
    assert control.location.listdir() == ["progress.json"]  # listed: a cache could keep this
    assert control.read_stop_request() is None
    subprocess.run([sys.executable, "-c", WRITE_STOP_REQUEST, checkpoint], check=True, timeout=120)
    request = control.read_stop_request()
    assert request is not None and request.requested_by == "another host"
    assert "stop-request.json" in control.location.listdir()
