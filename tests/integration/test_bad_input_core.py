"""Bad input to the core: each case gives a typed error naming the file, and changes nothing.

Every case starts from a copy of a checkpoint written by real Spark and a savepoint made
from it, breaks one thing, then hashes the whole tree before and after the failing call.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.core.state.restore import restore
from airflow_provider_kafkaspark.core.state.savepoint import RetentionPolicy, SavepointStore
from airflow_provider_kafkaspark.errors import (
    CheckpointError,
    ControlFileError,
    KafkaSparkError,
    LeaseHeldError,
    SavepointError,
    StorageError,
)
from tests.integration.spark_checkpoints import MadeCheckpoint


@dataclass
class Ctx:
    root: Path
    cp: Path
    store: SavepointStore
    sid: str

    @property
    def last(self) -> int:
        return max(int(f.name) for f in (self.cp / "offsets").iterdir() if f.name.isdigit())

    @property
    def sp_dir(self) -> Path:
        return self.root / "savepoints" / self.sid

    def offsets_file(self) -> Path:
        return self.cp / "offsets" / str(self.last)

    def rewrite_manifest(self, change: Callable[[dict[str, object]], None]) -> None:
        """Tamper with a manifest *and* re-seal it, so only the content check can catch it."""
        from airflow_provider_kafkaspark.core.state.savepoint import _manifest_digest

        path = self.sp_dir / "manifest.json"
        raw = json.loads(path.read_text())
        change(raw)
        text = json.dumps(raw)
        path.write_text(text)
        (self.sp_dir / "_COMPLETE").write_text(_manifest_digest(text))


Act = Callable[[], object]
# A case breaks something in ctx and returns (the failing call, error type, text it names).
CaseResult = tuple[Act, type[KafkaSparkError], str]
Case = Callable[[Ctx], CaseResult]


def position(ctx: Ctx) -> Act:
    return lambda: CheckpointReader(str(ctx.cp)).position()


def restore_to(ctx: Ctx, name: str, mode: str = "checkpoint", **kw: object) -> Act:
    return lambda: restore(ctx.store, ctx.sid, str(ctx.root / name), mode, **kw)  # type: ignore[arg-type]


def empty_offsets(ctx: Ctx) -> CaseResult:
    ctx.offsets_file().write_text("")
    return position(ctx), CheckpointError, f"offsets/{ctx.last}: empty"


def truncated_offsets(ctx: Ctx) -> CaseResult:
    ctx.offsets_file().write_text("v1\n")
    return position(ctx), CheckpointError, f"offsets/{ctx.last}: truncated"


def offsets_metadata_not_json(ctx: Ctx) -> CaseResult:
    ctx.offsets_file().write_text('v1\n{"batchWatermarkMs":\n{"t":{"0":1}}\n')
    return position(ctx), CheckpointError, f"offsets/{ctx.last}: batch metadata"


def source_line_not_json(ctx: Ctx) -> CaseResult:
    ctx.offsets_file().write_text('v1\n{"batchWatermarkMs":0}\n{"core_stateless":{"0":\n')
    return position(ctx), CheckpointError, f"offsets/{ctx.last}: source 0 offsets"


def unknown_log_version(ctx: Ctx) -> CaseResult:
    text = ctx.offsets_file().read_text()
    ctx.offsets_file().write_text("v9" + text[2:])
    return position(ctx), CheckpointError, "log version v9 is newer"


def garbage_version_line(ctx: Ctx) -> CaseResult:
    ctx.offsets_file().write_text("hello\n{}\n")
    return position(ctx), CheckpointError, f"offsets/{ctx.last}: bad log version line"


def missing_metadata(ctx: Ctx) -> CaseResult:
    (ctx.cp / "metadata").unlink()
    return position(ctx), CheckpointError, "metadata: missing"


def metadata_not_json(ctx: Ctx) -> CaseResult:
    (ctx.cp / "metadata").write_text("{id: nope}")
    return position(ctx), CheckpointError, "metadata: not JSON"


def metadata_without_id(ctx: Ctx) -> CaseResult:
    (ctx.cp / "metadata").write_text('{"query": "x"}')
    return position(ctx), CheckpointError, 'metadata: expected {"id"'


def commits_without_offsets(ctx: Ctx) -> CaseResult:
    orphan = ctx.last + 3
    (ctx.cp / "commits" / str(orphan)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return position(ctx), CheckpointError, f"commits/{orphan}"


def gap_in_offsets_log(ctx: Ctx) -> CaseResult:
    (ctx.cp / "offsets" / "1").unlink()
    act = lambda: ctx.store.create(str(ctx.cp), job_name="gap")  # noqa: E731
    return act, CheckpointError, "offsets: batches missing [1]"


def commit_not_json(ctx: Ctx) -> CaseResult:
    (ctx.cp / "commits" / str(ctx.last)).write_text("v1\n{oops")
    return position(ctx), CheckpointError, f"commits/{ctx.last}: commit metadata"


def kafka_offset_not_a_number(ctx: Ctx) -> CaseResult:
    ctx.offsets_file().write_text('v1\n{"batchWatermarkMs":0}\n{"core_stateless":{"0":"abc"}}\n')
    return position(ctx), CheckpointError, f"offsets/{ctx.last}"


def kafka_negative_partition(ctx: Ctx) -> CaseResult:
    ctx.offsets_file().write_text('v1\n{"batchWatermarkMs":0}\n{"core_stateless":{"-1":5}}\n')
    return position(ctx), CheckpointError, "partition '-1'"


def no_checkpoint_here(ctx: Ctx) -> CaseResult:
    empty = ctx.root / "empty"
    empty.mkdir()
    return (lambda: CheckpointReader(str(empty)).position()), CheckpointError, str(empty)


def url_without_filesystem(ctx: Ctx) -> CaseResult:
    return (lambda: CheckpointReader("nosuchfs://bucket/cp")), StorageError, "nosuchfs://"


def savepoint_wrong_checksum(ctx: Ctx) -> CaseResult:
    (ctx.sp_dir / "checkpoint" / "commits" / "0").write_text("v1\n{}\n")
    return restore_to(ctx, "target"), SavepointError, "commits/0: checksum"


def savepoint_missing_file(ctx: Ctx) -> CaseResult:
    (ctx.sp_dir / "checkpoint" / "sources" / "0" / "0").unlink()
    return restore_to(ctx, "target"), SavepointError, "sources/0/0: missing"


def manifest_for_another_savepoint(ctx: Ctx) -> CaseResult:
    ctx.rewrite_manifest(lambda m: m.update(savepoint_id="someone-else"))
    return (lambda: ctx.store.show(ctx.sid)), SavepointError, "manifest is for someone-else"


def manifest_changed_after_completion(ctx: Ctx) -> CaseResult:
    path = ctx.sp_dir / "manifest.json"
    raw = json.loads(path.read_text())
    raw["query_id"] = "another-query"
    path.write_text(json.dumps(raw))
    return restore_to(ctx, "target"), SavepointError, "manifest.json: changed after"


def manifest_path_traversal(ctx: Ctx) -> CaseResult:
    def evil(m: dict[str, object]) -> None:
        m["files"] = [{"path": "../../etc/passwd", "size": 1, "sha256": "sha256:0"}]

    ctx.rewrite_manifest(evil)
    return (lambda: ctx.store.show(ctx.sid)), SavepointError, "escapes the savepoint"


def manifest_unknown_format(ctx: Ctx) -> CaseResult:
    ctx.rewrite_manifest(lambda m: m.update(format_version=99))
    return (lambda: ctx.store.show(ctx.sid)), SavepointError, "manifest format 99"


def manifest_not_json(ctx: Ctx) -> CaseResult:
    (ctx.sp_dir / "manifest.json").write_text("{")
    return (lambda: ctx.store.show(ctx.sid)), SavepointError, "manifest.json: not JSON"


def incomplete_savepoint(ctx: Ctx) -> CaseResult:
    (ctx.sp_dir / "_COMPLETE").unlink()
    return restore_to(ctx, "target"), SavepointError, "incomplete"


def non_empty_restore_target(ctx: Ctx) -> CaseResult:
    (ctx.root / "target").mkdir()
    (ctx.root / "target" / "data.txt").write_text("x")
    return restore_to(ctx, "target"), SavepointError, "target is not empty"


def restore_target_with_live_driver(ctx: Ctx) -> CaseResult:
    target = ctx.root / "target"
    shutil.copytree(ctx.cp, target)
    ControlFolder(str(target)).acquire_lease(Lease.new("other"))
    act = restore_to(ctx, "target", move_target_aside=True)
    return act, LeaseHeldError, "live driver"


def savepoint_of_a_live_checkpoint(ctx: Ctx) -> CaseResult:
    ControlFolder(str(ctx.cp)).acquire_lease(Lease.new("live"))
    act = lambda: ctx.store.create(str(ctx.cp), job_name="live")  # noqa: E731
    return act, LeaseHeldError, str(ctx.cp)


def offsets_restore_with_pending_batch(ctx: Ctx) -> CaseResult:
    (ctx.cp / "commits" / str(ctx.last)).unlink()
    pending = ctx.store.create(str(ctx.cp), job_name="pending").savepoint_id
    act = lambda: restore(ctx.store, pending, str(ctx.root / "t"), "offsets")  # noqa: E731
    return act, SavepointError, f"pending batch {ctx.last}"


def unknown_restore_mode(ctx: Ctx) -> CaseResult:
    return restore_to(ctx, "t", mode="sideways"), SavepointError, "restore mode 'sideways'"


def traversal_savepoint_id(ctx: Ctx) -> CaseResult:
    return (lambda: ctx.store.show("../../etc")), SavepointError, "bad savepoint id '../../etc'"


def savepoint_id_with_slash(ctx: Ctx) -> CaseResult:
    act = lambda: restore(ctx.store, "a/b", str(ctx.root / "t"), "checkpoint")  # noqa: E731
    return act, SavepointError, "bad savepoint id 'a/b'"


def unknown_savepoint(ctx: Ctx) -> CaseResult:
    return (lambda: ctx.store.show("nope-123")), SavepointError, "nope-123: no such savepoint"


def dispose_in_use(ctx: Ctx) -> CaseResult:
    ctx.store.mark_in_use(ctx.sid)
    return (lambda: ctx.store.dispose(ctx.sid)), SavepointError, "marked in use"


def bad_retention_policy(ctx: Ctx) -> CaseResult:
    return (lambda: RetentionPolicy(max_count=0)), SavepointError, "max_count must be 1"


def lease_not_json(ctx: Ctx) -> CaseResult:
    (ctx.cp / "_kafkaspark").mkdir()
    (ctx.cp / "_kafkaspark" / "lease.json").write_text("owner=me")
    act = lambda: ControlFolder(str(ctx.cp)).read_lease()  # noqa: E731
    return act, ControlFileError, "_kafkaspark/lease.json: not JSON"


def progress_with_unknown_fields(ctx: Ctx) -> CaseResult:
    (ctx.cp / "_kafkaspark").mkdir()
    (ctx.cp / "_kafkaspark" / "progress.json").write_text('{"query_id": "q", "surprise": 1}')
    act = lambda: ControlFolder(str(ctx.cp)).read_progress()  # noqa: E731
    return act, ControlFileError, "unknown fields ['surprise']"


CASES: list[Case] = [
    empty_offsets,
    truncated_offsets,
    offsets_metadata_not_json,
    source_line_not_json,
    unknown_log_version,
    garbage_version_line,
    missing_metadata,
    metadata_not_json,
    metadata_without_id,
    commits_without_offsets,
    gap_in_offsets_log,
    commit_not_json,
    kafka_offset_not_a_number,
    kafka_negative_partition,
    no_checkpoint_here,
    url_without_filesystem,
    savepoint_wrong_checksum,
    savepoint_missing_file,
    manifest_for_another_savepoint,
    manifest_changed_after_completion,
    manifest_path_traversal,
    manifest_unknown_format,
    manifest_not_json,
    incomplete_savepoint,
    non_empty_restore_target,
    restore_target_with_live_driver,
    savepoint_of_a_live_checkpoint,
    offsets_restore_with_pending_batch,
    unknown_restore_mode,
    traversal_savepoint_id,
    savepoint_id_with_slash,
    unknown_savepoint,
    dispose_in_use,
    bad_retention_policy,
    lease_not_json,
    progress_with_unknown_fields,
]


def tree_hash(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        if p.is_file()
        else "dir"
        for p in sorted(root.rglob("*"))
    }


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_bad_input_gives_typed_error_and_changes_nothing(
    case: Case, made_checkpoints: dict[str, MadeCheckpoint], tmp_path: Path
) -> None:
    cp = tmp_path / "checkpoint"
    shutil.copytree(made_checkpoints["stateless"].path, cp)
    store = SavepointStore(str(tmp_path / "savepoints"))
    sid = store.create(str(cp), job_name="corpus").savepoint_id
    ctx = Ctx(tmp_path, cp, store, sid)

    act, error, text = case(ctx)
    before = tree_hash(tmp_path)
    with pytest.raises(error) as raised:
        act()
    assert text in str(raised.value)
    assert tree_hash(tmp_path) == before, "a failing call changed files"
