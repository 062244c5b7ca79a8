"""Restoring a savepoint, in the three modes of the Flink Kubernetes Operator's spirit.

- `checkpoint`: copy the savepoint's checkpoint into an empty location; the query resumes
  with its state and re-runs a planned-but-uncommitted batch exactly as Spark would. When
  the checkpoint it replaces had run the same query past the savepoint (a rollback), the
  restored copy gets a new query id (`ran_past_savepoint`).
- `offsets`: no state; give a fresh checkpoint the `startingOffsets` of the last committed
  batch. Refused when the savepoint has a pending batch, unless forced (see the error).
- `latest`: no state, no offsets: start from the end of each partition.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from airflow_provider_kafkaspark.core.control.folder import (
    CODE_DIR,
    CONTROL_DIR,
    DEPLOYMENT_FILE,
    ControlFolder,
)
from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.control.reports import WrittenBy
from airflow_provider_kafkaspark.core.kafka.offsets import format_kafka_offsets, parse_kafka_offsets
from airflow_provider_kafkaspark.core.state.checkpoint import METADATA_FILE, CheckpointReader
from airflow_provider_kafkaspark.core.state.savepoint import (
    SavepointFile,
    SavepointManifest,
    SavepointStore,
    copy_file,
)
from airflow_provider_kafkaspark.core.state.spark_compat import continue_refusal
from airflow_provider_kafkaspark.core.storage.location import Location, open_location
from airflow_provider_kafkaspark.errors import (
    KafkaSparkError,
    LeaseHeldError,
    SavepointError,
    StorageError,
)

log = logging.getLogger(__name__)

RESTORED_FROM_FILE = "restored-from.json"


class RestoreMode(str, enum.Enum):
    CHECKPOINT = "checkpoint"
    OFFSETS = "offsets"
    LATEST = "latest"

    @classmethod
    def parse(cls, value: str | RestoreMode) -> RestoreMode:
        try:
            return cls(value)
        except ValueError as exc:
            raise SavepointError(
                f"restore mode {value!r} is not one of {[m.value for m in cls]}"
            ) from exc


@dataclass(frozen=True)
class RestoreResult:
    mode: RestoreMode
    savepoint_id: str | None
    checkpoint: str
    starting_offsets: str  # the Kafka source's startingOffsets for the submit
    backup: str | None = None
    files: int = 0
    # The restored copy's new query id, when the replaced checkpoint had run past the
    # savepoint (`ran_past_savepoint`); None: the savepoint's own.
    new_query_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode.value,
            "savepoint_id": self.savepoint_id,
            "checkpoint": self.checkpoint,
            "starting_offsets": self.starting_offsets,
            "backup": self.backup,
            "files": self.files,
            "new_query_id": self.new_query_id,
        }


@dataclass(frozen=True)
class ReplacedRun:
    """What the checkpoint a restore moves aside says of its query."""

    query_id: str
    last_planned_batch: int | None


def ran_past_savepoint(manifest: SavepointManifest, replaced: ReplacedRun | None) -> bool:
    """Whether the checkpoint a restore replaces ran the savepoint's query past the savepoint:
    it planned a later batch than the savepoint's last (a rollback, or a run that crashed in
    a batch after it). The restored query plans those batch ids again, with the offsets
    Kafka has now rather than the ones they had. A sink that remembers what it wrote by
    (query id, batch id), as the exactly-once Kafka sink does with its markers, would take
    what it wrote of them for written and skip it: that output would be lost. So the
    restored copy gets a new query id, and everything after the savepoint is written again,
    as a Flink job restored from an older savepoint writes it again. A planned batch is
    enough: its tasks may have committed before the run stopped."""
    if replaced is None or replaced.query_id != manifest.query_id:
        return False
    if replaced.last_planned_batch is None:
        return False
    saved = manifest.last_planned_batch
    return saved is None or replaced.last_planned_batch > saved


def _replaced_run(target: Location) -> ReplacedRun | None:
    """The query of a checkpoint about to be moved aside; None if it is not one."""
    reader = CheckpointReader(target)
    try:
        return ReplacedRun(reader.query_id(), reader.position().latest_planned)
    except KafkaSparkError:
        return None  # not a Spark checkpoint (or not readable): nothing of it is reused


def _is_empty(location: Location) -> bool:
    return not location.has_files()


def move_aside(location: Location) -> Location:
    """Rename a non-empty location to `<name>.backup-<UTC stamp>`; nothing is deleted."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    backup_path = f"{location.root.rstrip('/')}.backup-{stamp}"
    backup = Location(location.fs, backup_path, f"{location.url.rstrip('/')}.backup-{stamp}")
    if location.on_local_disk:
        location.fs.mv(location.root, backup_path, recursive=True)
    else:
        _copy_then_remove(location, backup)
    log.warning("moved %s aside to %s", location.url, backup.url)
    _carry_deployment(backup, location)
    return backup


def _carry_deployment(backup: Location, location: Location) -> None:
    """The deployment's record and the code it keeps belong to the job's location, not to the
    state moved aside: put them back, byte for byte (the record's conditional writes compare
    versions; a rollback fetches the stable spec's code from there)."""
    code = [rel for rel, _size in backup.walk_files(CONTROL_DIR, CODE_DIR)]
    if backup.exists(CONTROL_DIR, DEPLOYMENT_FILE):
        code.append(f"{CONTROL_DIR}/{DEPLOYMENT_FILE}")
    for rel in code:
        with backup.fs.open(backup.path(rel), "rb") as fin:
            location.write_atomic(fin.read(), rel)


def _copy_then_remove(location: Location, backup: Location) -> None:
    """An object store has no folders to rename: copy every file (server-side), check each
    copy's size, and only then remove the originals."""
    files = list(location.walk_files())
    location.map_files(
        lambda rel: location.fs.copy(location.path(rel), backup.path(rel)), [r for r, _ in files]
    )
    location.fs.invalidate_cache()
    copied = dict(backup.walk_files())
    missing = [rel for rel, size in files if copied.get(rel) != size]
    if missing:
        raise StorageError(
            f"moving {location.url} aside to {backup.url}: {len(missing)} file(s) did not copy "
            f"whole (first: {missing[0]}); nothing was removed"
        )
    location.fs.rm([location.path(rel) for rel, _ in files])
    # Then the empty folder markers: left behind, an `offsets/` marker makes the emptied
    # location look like a started checkpoint to the next submit.
    markers = location.folder_markers()
    if markers:
        location.fs.rm(markers)
    location.fs.invalidate_cache()


def restore(
    store: SavepointStore,
    savepoint_ref: str | None,
    target: str | Location,
    mode: str | RestoreMode,
    *,
    job_name: str | None = None,
    move_target_aside: bool = False,
    force: bool = False,
    spark_version: str | None = None,
) -> RestoreResult:
    """Restore `savepoint_ref` (an id or `latest`) for a query that will use `target`, run by
    a driver of `spark_version` when known (a checkpoint-mode restore onto an earlier Spark
    than the savepoint's is refused before anything moves)."""
    chosen = RestoreMode.parse(mode)
    location = open_location(target) if isinstance(target, str) else target
    if chosen is RestoreMode.LATEST:
        return RestoreResult(chosen, None, location.url, "latest")
    if savepoint_ref is None:
        raise SavepointError(f"restore mode {chosen.value} needs a savepoint id or 'latest'")
    manifest = store.resolve(savepoint_ref, job_name)
    if chosen is RestoreMode.OFFSETS:
        return RestoreResult(
            chosen, manifest.savepoint_id, location.url, starting_offsets(manifest, force=force)
        )
    refusal = continue_refusal(manifest.spark_version, spark_version)
    if refusal is not None:
        raise SavepointError(f"savepoint {manifest.savepoint_id}: {refusal}")
    return _restore_checkpoint(store, manifest, location, move_target_aside)


def starting_offsets(manifest: SavepointManifest, *, force: bool = False) -> str:
    """The `startingOffsets` JSON of the savepoint's last committed batch."""
    if manifest.pending_batch is not None and not force:
        raise SavepointError(
            f"savepoint {manifest.savepoint_id} has a pending batch {manifest.pending_batch}: "
            f"it was planned (up to offsets {json.dumps(manifest.planned_offsets)}) but not "
            f"committed, so its output may be partly written. Starting a fresh checkpoint at "
            f"the committed offsets re-reads that batch (duplicates in a sink that is not "
            f"idempotent); starting at the planned offsets skips what it did not write "
            f"(loss). Restore in 'checkpoint' mode, which re-runs the batch as Spark "
            f"would, or pass force to accept the committed offsets"
        )
    if not manifest.offsets:
        raise SavepointError(
            f"savepoint {manifest.savepoint_id} has no committed Kafka offsets to start from"
        )
    where = f"savepoint {manifest.savepoint_id} offsets"
    return format_kafka_offsets(parse_kafka_offsets(json.dumps(manifest.offsets), where=where))


def _restore_checkpoint(
    store: SavepointStore, manifest: SavepointManifest, target: Location, move_target_aside: bool
) -> RestoreResult:
    sid = manifest.savepoint_id
    store.require_verified(sid)
    backup: Location | None = None
    replaced: ReplacedRun | None = None
    if not _is_empty(target):
        lease = ControlFolder(target).live_lease()
        if lease is not None:
            raise LeaseHeldError(
                f"{target.url}: a live driver holds this checkpoint ({lease.describe()}); "
                f"stop it before restoring over it"
            )
        if not move_target_aside:
            raise SavepointError(
                f"{target.url}: restore target is not empty; restore into an empty location "
                f"or let the restore move it aside as a backup first"
            )
        replaced = _replaced_run(target)
        backup = move_aside(target)
    data = store.data_location(sid)

    def copy(f: SavepointFile) -> None:
        size, digest = copy_file(data, f.path, target, f.path)
        if digest != f.sha256 or size != f.size:
            raise SavepointError(
                f"{target.describe(f.path)}: copy does not match the manifest "
                f"({size} bytes, {digest[:19]}...)"
            )

    target.map_files(copy, manifest.files)
    new_query_id = None
    if ran_past_savepoint(manifest, replaced):
        assert replaced is not None
        new_query_id = str(uuid.uuid4())
        # Spark's own format for the query id: one JSON line.
        target.write_atomic(json.dumps({"id": new_query_id}) + "\n", METADATA_FILE)
        log.warning(
            "%s had run query %s to batch %s, past savepoint %s (batch %s): the restored "
            "copy runs as query %s, so that a sink keyed by query and batch writes the "
            "batches after the savepoint again instead of taking them for written",
            backup.url if backup else target.url,
            manifest.query_id,
            replaced.last_planned_batch,
            sid,
            manifest.last_planned_batch,
            new_query_id,
        )
    provenance = {
        "savepoint_id": sid,
        "savepoint_root": store.location.url,
        "restored_at_ms": now_ms(),
        "last_committed_batch": manifest.last_committed_batch,
        "pending_batch": manifest.pending_batch,
        "backup": backup.url if backup else None,
        "new_query_id": new_query_id,
    }
    target.write_atomic(json.dumps(provenance, sort_keys=True), CONTROL_DIR, RESTORED_FROM_FILE)
    if manifest.spark_version:
        ControlFolder(target).write_written_by(WrittenBy(manifest.spark_version, now_ms()))
    log.info("restored savepoint %s into %s (%d files)", sid, target.url, len(manifest.files))
    return RestoreResult(
        RestoreMode.CHECKPOINT,
        sid,
        target.url,
        # Ignored by Spark for an existing checkpoint; kept for the job spec's sake.
        "earliest",
        backup.url if backup else None,
        len(manifest.files),
        new_query_id,
    )
