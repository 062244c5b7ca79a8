"""CheckpointReader, savepoints and restore on checkpoints written by real Spark queries."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.core.state.restore import RestoreMode, restore
from airflow_provider_kafkaspark.core.state.savepoint import (
    COMPLETE_FILE,
    RetentionPolicy,
    SavepointStore,
)
from airflow_provider_kafkaspark.errors import LeaseHeldError, SavepointError
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.integration.spark_checkpoints import MadeCheckpoint, run_stateless

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def copy_of(made: MadeCheckpoint, tmp_path: Path) -> Path:
    target = tmp_path / f"{made.path.name}-copy"
    shutil.copytree(made.path, target)
    return target


def test_reader_sees_what_spark_wrote(made_checkpoints: dict[str, MadeCheckpoint]) -> None:
    made = made_checkpoints["stateless"]
    reader = CheckpointReader(str(made.path))
    position = reader.position()
    query_id = json.loads((made.path / "metadata").read_text())["id"]
    assert position.query_id == query_id
    last = position.latest_committed
    assert last is not None and last >= 2  # 3,000 records at 1,000 per trigger
    assert position.latest_planned == last and position.pending_batch is None
    assert reader.planned_batches() == list(range(last + 1))
    assert sum(position.committed_offsets[made.topic].values()) == made.records
    assert set(position.committed_offsets[made.topic]) == {0, 1, 2}
    assert position.planned is not None and position.planned.conf["spark.sql.shuffle.partitions"]
    assert position.planned.timestamp_ms > 0
    assert reader.validate() == []
    # file:// URLs read the same checkpoint
    assert CheckpointReader(f"file://{made.path}").position().to_dict()["query_id"] == query_id
    json.dumps(position.to_dict())


def test_state_layout_of_a_windowed_count(made_checkpoints: dict[str, MadeCheckpoint]) -> None:
    made = made_checkpoints["stateful"]
    reader = CheckpointReader(str(made.path))
    layout = reader.state_layout()
    position = reader.position()
    assert layout.operators == ["0"]
    assert {p.partition for p in layout.partitions} == {"0", "1"}  # shuffle partitions = 2
    assert position.latest_committed is not None
    assert layout.latest_version == position.latest_committed + 1  # state version = batch + 1
    state = made.path / "state"
    on_disk = sum(
        f.stat().st_size
        for f in state.rglob("*")
        if f.is_file() and f.relative_to(state).parts[1].isdigit()
    )
    assert layout.total_bytes == on_disk


def test_pending_batch_is_reported(
    made_checkpoints: dict[str, MadeCheckpoint], tmp_path: Path
) -> None:
    path = copy_of(made_checkpoints["stateless"], tmp_path)
    last = max(int(f.name) for f in (path / "commits").iterdir() if f.name.isdigit())
    (path / "commits" / str(last)).unlink()
    position = CheckpointReader(str(path)).position()
    assert position.pending_batch == last
    assert position.latest_committed == last - 1
    assert position.planned_offsets != position.committed_offsets


def test_savepoint_copies_everything_and_verifies(
    made_checkpoints: dict[str, MadeCheckpoint], tmp_path: Path
) -> None:
    made = made_checkpoints["stateful"]
    store = SavepointStore(str(tmp_path / "savepoints"))
    manifest = store.create(str(made.path), job_name="windowed", spark_version="4.0.0")
    position = CheckpointReader(str(made.path)).position()
    assert manifest.query_id == position.query_id
    assert manifest.last_committed_batch == position.latest_committed
    assert manifest.offsets == {
        made.topic: {str(p): o for p, o in position.committed_offsets[made.topic].items()}
    }
    paths = {f.path for f in manifest.files}
    assert "metadata" in paths and "sources/0/0" in paths
    assert {f"offsets/{b}" for b in range(position.latest_committed + 1)} <= paths  # type: ignore[operator]
    assert any(p.startswith("state/0/1/") and p.endswith(".delta") for p in paths)
    assert all(f.sha256.startswith("sha256:") and f.size >= 0 for f in manifest.files)
    assert store.verify(manifest.savepoint_id).ok
    assert [m.savepoint_id for m in store.list()] == [manifest.savepoint_id]
    assert store.show(manifest.savepoint_id) == manifest
    assert store.resolve("latest", "windowed") == manifest
    summary = manifest.summary()
    assert summary["files"] == len(manifest.files) and "files" not in json.dumps(summary)[:0]


def test_incomplete_savepoint_is_invisible(
    made_checkpoints: dict[str, MadeCheckpoint], tmp_path: Path
) -> None:
    store = SavepointStore(str(tmp_path / "sp"))
    manifest = store.create(str(made_checkpoints["stateless"].path), job_name="j")
    (tmp_path / "sp" / manifest.savepoint_id / COMPLETE_FILE).unlink()  # as if crashed
    assert store.list() == []
    with pytest.raises(SavepointError, match="incomplete"):
        store.show(manifest.savepoint_id)


def test_live_lease_refuses_savepoint_unless_forced(
    made_checkpoints: dict[str, MadeCheckpoint], tmp_path: Path
) -> None:
    path = copy_of(made_checkpoints["stateless"], tmp_path)
    ControlFolder(str(path)).acquire_lease(Lease.new("live-job"))
    store = SavepointStore(str(tmp_path / "sp"))
    with pytest.raises(LeaseHeldError, match="live driver"):
        store.create(str(path), job_name="live-job")
    assert not (tmp_path / "sp").exists() or store.list() == []
    forced = store.create(str(path), job_name="live-job", force=True)
    assert forced.forced is True
    # The control folder (lease) is never part of a savepoint.
    assert not any(f.path.startswith("_kafkaspark") for f in forced.files)


def test_prune_keeps_newest_verified_and_in_use(
    made_checkpoints: dict[str, MadeCheckpoint], tmp_path: Path
) -> None:
    store = SavepointStore(str(tmp_path / "sp"))
    ids = [
        store.create(str(made_checkpoints["stateless"].path), job_name="j").savepoint_id
        for _ in range(4)
    ]  # oldest first
    store.mark_in_use(ids[0])
    # Corrupt the newest: the newest *verified* one must be kept instead.
    newest_data = tmp_path / "sp" / ids[3] / "checkpoint" / "metadata"
    newest_data.write_text('{"id":"tampered"}')
    result = store.prune(RetentionPolicy(max_count=1))
    assert set(result.kept) == {ids[0], ids[2], ids[3]}
    assert result.reasons[ids[2]] == "newest verified"
    assert result.reasons[ids[0]] == "in use"
    assert result.disposed == (ids[1],)
    assert {m.savepoint_id for m in store.list()} == {ids[0], ids[2], ids[3]}
    assert not (tmp_path / "sp" / ids[1]).exists()


def test_restore_round_trip_continues_exactly_from_the_savepoint(
    kafka_cluster: LocalKafkaCluster, spark: SparkSession, tmp_path: Path
) -> None:
    """Savepoint a stopped query, restore in checkpoint mode elsewhere, restart there: the
    restored query reads every record after the savepoint once and nothing before it."""
    bootstrap = kafka_cluster.bootstrap_servers
    topic = "restore_round_trip"
    create_topic(bootstrap, topic, 3)
    produce_numbered(bootstrap, topic, 1500)
    original = tmp_path / "original"
    run_stateless(spark, bootstrap, topic, original, "rt_first", max_per_trigger=500)

    store = SavepointStore(str(tmp_path / "savepoints"))
    manifest = store.create(str(original), job_name="rt")
    produce_numbered(bootstrap, topic, 1000, start=1500)

    restored = tmp_path / "restored"
    result = restore(store, manifest.savepoint_id, str(restored), RestoreMode.CHECKPOINT)
    assert result.files == len(manifest.files)
    assert CheckpointReader(str(restored)).position().query_id == manifest.query_id
    run_stateless(spark, bootstrap, topic, restored, "rt_second", max_per_trigger=500)

    first = {(r[0], r[1]) for r in spark.sql("SELECT partition, offset FROM rt_first").collect()}
    second_rows = spark.sql("SELECT partition, offset, value FROM rt_second").collect()
    second = {(r[0], r[1]) for r in second_rows}
    assert len(second) == len(second_rows), "a record was read twice after restore"
    assert first.isdisjoint(second)
    assert {int(r[2]) for r in second_rows} == set(range(1500, 2500))
    for partition, offset in manifest.offsets[topic].items():
        assert min(o for p, o in second if p == int(partition)) == offset


def test_restore_offsets_mode_starts_a_fresh_checkpoint_at_the_committed_offsets(
    kafka_cluster: LocalKafkaCluster, spark: SparkSession, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = "restore_offsets_mode"
    create_topic(bootstrap, topic, 2)
    produce_numbered(bootstrap, topic, 600)
    run_stateless(spark, bootstrap, topic, tmp_path / "first", "om_first")
    store = SavepointStore(str(tmp_path / "sp"))
    manifest = store.create(str(tmp_path / "first"), job_name="om")
    produce_numbered(bootstrap, topic, 400, start=600)

    result = restore(store, "latest", str(tmp_path / "fresh"), "offsets", job_name="om")
    assert json.loads(result.starting_offsets) == manifest.offsets
    run_stateless(
        spark,
        bootstrap,
        topic,
        tmp_path / "fresh",
        "om_second",
        starting_offsets=result.starting_offsets,
    )
    values = sorted(int(r[0]) for r in spark.sql("SELECT value FROM om_second").collect())
    assert values == list(range(600, 1000))


def test_restore_checkpoint_mode_reruns_the_pending_batch(
    made_checkpoints: dict[str, MadeCheckpoint], tmp_path: Path
) -> None:
    path = copy_of(made_checkpoints["stateless"], tmp_path)
    last = max(int(f.name) for f in (path / "commits").iterdir() if f.name.isdigit())
    (path / "commits" / str(last)).unlink()  # planned, not committed: as after a crash
    store = SavepointStore(str(tmp_path / "sp"))
    manifest = store.create(str(path), job_name="pending")
    assert manifest.pending_batch == last
    assert f"offsets/{last}" in {f.path for f in manifest.files}
    with pytest.raises(SavepointError, match="pending batch"):
        restore(store, manifest.savepoint_id, str(tmp_path / "x"), "offsets")
    forced = restore(store, manifest.savepoint_id, str(tmp_path / "x"), "offsets", force=True)
    assert json.loads(forced.starting_offsets) == manifest.offsets
    result = restore(store, manifest.savepoint_id, str(tmp_path / "restored"), "checkpoint")
    restored_position = CheckpointReader(result.checkpoint).position()
    assert restored_position.pending_batch == last


def test_restore_over_a_non_empty_target_moves_it_aside(
    made_checkpoints: dict[str, MadeCheckpoint], tmp_path: Path
) -> None:
    store = SavepointStore(str(tmp_path / "sp"))
    manifest = store.create(str(made_checkpoints["stateless"].path), job_name="j")
    target = tmp_path / "target"
    target.mkdir()
    (target / "precious").write_text("keep me")
    with pytest.raises(SavepointError, match="not empty"):
        restore(store, manifest.savepoint_id, str(target), "checkpoint")
    assert (target / "precious").read_text() == "keep me"
    result = restore(
        store, manifest.savepoint_id, str(target), "checkpoint", move_target_aside=True
    )
    assert result.backup is not None
    assert Path(result.backup, "precious").read_text() == "keep me"
    assert CheckpointReader(str(target)).position().query_id == manifest.query_id


def test_a_rollback_over_a_run_past_the_savepoint_gets_a_new_query_id(
    made_checkpoints: dict[str, MadeCheckpoint], tmp_path: Path
) -> None:
    """The savepoint is older than the checkpoint it is restored over (a rollback): the
    restored copy runs as a new query, so that the exactly-once sink does not take the batch
    ids it plans again, with other offsets, for the ones the rolled-back run wrote."""
    ran_on = copy_of(made_checkpoints["stateless"], tmp_path)
    last = CheckpointReader(str(ran_on)).position().latest_committed
    assert last is not None and last >= 1
    older = tmp_path / "older"
    shutil.copytree(ran_on, older)
    for log_dir in ("commits", "offsets"):
        (older / log_dir / str(last)).unlink()  # the state one batch before
    store = SavepointStore(str(tmp_path / "sp"))
    manifest = store.create(str(older), job_name="rollback")
    assert manifest.last_committed_batch == last - 1

    same = restore(store, manifest.savepoint_id, str(older), "checkpoint", move_target_aside=True)
    assert same.new_query_id is None
    assert CheckpointReader(str(older)).query_id() == manifest.query_id

    result = restore(
        store, manifest.savepoint_id, str(ran_on), "checkpoint", move_target_aside=True
    )
    assert result.new_query_id is not None and result.new_query_id != manifest.query_id
    restored = CheckpointReader(str(ran_on))
    assert restored.query_id() == result.new_query_id
    assert restored.position().latest_committed == last - 1
    provenance = json.loads((ran_on / "_kafkaspark" / "restored-from.json").read_text())
    assert provenance["new_query_id"] == result.new_query_id
    # The run that was rolled back is kept as it was.
    assert result.backup is not None
    assert CheckpointReader(result.backup).query_id() == manifest.query_id
    assert CheckpointReader(result.backup).position().latest_committed == last
