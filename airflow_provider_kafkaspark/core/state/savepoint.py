"""Savepoints: verified, self-describing copies of a stopped query's checkpoint.

Layout under a savepoint root URL:

    <root>/<savepoint id>/manifest.json      what, from where, every file with size+checksum
    <root>/<savepoint id>/checkpoint/...     metadata, offsets/, commits/, sources/, state/
    <root>/<savepoint id>/_COMPLETE          written last: holds the manifest's checksum
    <root>/<savepoint id>/_IN_USE            optional: pruning never disposes this one

A savepoint without `_COMPLETE` is invisible to `list`: a crash mid-copy leaves nothing
that looks usable. The offsets log is copied whole, planned batch included, because Spark
re-runs a planned-but-uncommitted batch on restart and exactly-once sinks rely on that.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from airflow_provider_kafkaspark.core.control.folder import CONTROL_DIR, ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease, now_ms
from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker
from airflow_provider_kafkaspark.core.kafka.offsets import offsets_json
from airflow_provider_kafkaspark.core.state.checkpoint import (
    COMMITS_DIR,
    METADATA_FILE,
    OFFSETS_DIR,
    SOURCES_DIR,
    STATE_DIR,
    CheckpointPosition,
    CheckpointReader,
    state_file_version,
)
from airflow_provider_kafkaspark.core.state.running_copy import is_temporary
from airflow_provider_kafkaspark.core.storage.location import Location, open_location
from airflow_provider_kafkaspark.errors import (
    CheckpointError,
    LeaseHeldError,
    NothingCommittedError,
    SavepointError,
    StorageError,
)

log = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"
COMPLETE_FILE = "_COMPLETE"
IN_USE_FILE = "_IN_USE"
KEPT_LAST_STABLE = "kept: last stable"
DATA_DIR = "checkpoint"
FORMAT_VERSION = 1
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,159}$")
_CHUNK = 1 << 20


def validate_savepoint_id(savepoint_id: str) -> str:
    """Ids become folder names: no separators, no `..`, no hidden names."""
    if not isinstance(savepoint_id, str) or not _ID.match(savepoint_id) or ".." in savepoint_id:
        raise SavepointError(
            f"bad savepoint id {savepoint_id!r}: use letters, digits, '.', '_' and '-' "
            f"(no '/', no '..', 160 characters at most)"
        )
    return savepoint_id


def _slug(text: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "job"
    return slug[:80]


def redact_url(url: str) -> str:
    """A URL without user info (`s3://key:secret@bucket` must not reach a manifest)."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        return urlunsplit(parts._replace(netloc=host))
    return url


@dataclass(frozen=True)
class SavepointFile:
    path: str  # relative to the savepoint's checkpoint/ folder
    size: int
    sha256: str


@dataclass(frozen=True)
class StopRecord:
    """The stopped report a savepoint was taken after: which driver stopped, when, and at
    which batches. A retried stop matches it against the report it finds, to return the
    savepoint it already took instead of a second copy of the same batch."""

    owner_id: str | None
    stopped_at_ms: int
    last_planned_batch: int | None
    last_committed_batch: int | None

    @classmethod
    def of(cls, report: StoppedReport) -> StopRecord:
        return cls(
            report.owner_id,
            report.stopped_at_ms,
            report.last_planned_batch,
            report.last_committed_batch,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "owner_id": self.owner_id,
            "stopped_at_ms": self.stopped_at_ms,
            "last_planned_batch": self.last_planned_batch,
            "last_committed_batch": self.last_committed_batch,
        }

    @classmethod
    def from_dict(cls, raw: Any) -> StopRecord:
        return cls(
            owner_id=None if raw["owner_id"] is None else str(raw["owner_id"]),
            stopped_at_ms=int(raw["stopped_at_ms"]),
            last_planned_batch=_opt_int(raw["last_planned_batch"]),
            last_committed_batch=_opt_int(raw["last_committed_batch"]),
        )


@dataclass(frozen=True)
class SavepointManifest:
    savepoint_id: str
    job_name: str
    query_id: str
    last_planned_batch: int | None
    last_committed_batch: int | None
    pending_batch: int | None
    offsets: dict[str, dict[str, int]]  # of the last committed batch
    planned_offsets: dict[str, dict[str, int]]  # of the last planned batch
    created_at: str
    created_at_ms: int
    spark_version: str | None
    source_checkpoint: str
    files: tuple[SavepointFile, ...]
    format_version: int = FORMAT_VERSION
    forced: bool = False
    # Absent from savepoints not taken right after a stop, and from earlier releases'.
    after_stop: StopRecord | None = None
    # A copy of a running query as of its last committed batch (`running_copy`).
    of_running: bool = False

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": self.format_version,
            "savepoint_id": self.savepoint_id,
            "job_name": self.job_name,
            "query_id": self.query_id,
            "last_planned_batch": self.last_planned_batch,
            "last_committed_batch": self.last_committed_batch,
            "pending_batch": self.pending_batch,
            "offsets": self.offsets,
            "planned_offsets": self.planned_offsets,
            "created_at": self.created_at,
            "created_at_ms": self.created_at_ms,
            "spark_version": self.spark_version,
            "source_checkpoint": self.source_checkpoint,
            "forced": self.forced,
            "after_stop": None if self.after_stop is None else self.after_stop.to_dict(),
            "of_running": self.of_running,
            "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in self.files],
        }

    def summary(self) -> dict[str, Any]:
        """The small form for XCom and listings: no file table."""
        return {
            "savepoint_id": self.savepoint_id,
            "job_name": self.job_name,
            "query_id": self.query_id,
            "last_planned_batch": self.last_planned_batch,
            "last_committed_batch": self.last_committed_batch,
            "pending_batch": self.pending_batch,
            "created_at": self.created_at,
            "files": len(self.files),
            "bytes": self.total_bytes,
            "of_running": self.of_running,
        }

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> SavepointManifest:
        if not isinstance(raw, dict):
            raise SavepointError(f"{where}: manifest is not a JSON object")
        version = raw.get("format_version")
        if version != FORMAT_VERSION:
            raise SavepointError(f"{where}: manifest format {version!r} is not {FORMAT_VERSION}")
        try:
            files = tuple(
                SavepointFile(str(f["path"]), int(f["size"]), str(f["sha256"]))
                for f in raw["files"]
            )
            for f in files:
                _check_relative(f.path, where)
            return cls(
                savepoint_id=validate_savepoint_id(str(raw["savepoint_id"])),
                job_name=str(raw["job_name"]),
                query_id=str(raw["query_id"]),
                last_planned_batch=_opt_int(raw["last_planned_batch"]),
                last_committed_batch=_opt_int(raw["last_committed_batch"]),
                pending_batch=_opt_int(raw["pending_batch"]),
                offsets=_offsets(raw["offsets"]),
                planned_offsets=_offsets(raw["planned_offsets"]),
                created_at=str(raw["created_at"]),
                created_at_ms=int(raw["created_at_ms"]),
                spark_version=None if raw["spark_version"] is None else str(raw["spark_version"]),
                source_checkpoint=str(raw["source_checkpoint"]),
                files=files,
                forced=bool(raw.get("forced", False)),
                after_stop=None
                if raw.get("after_stop") is None
                else StopRecord.from_dict(raw["after_stop"]),
                of_running=bool(raw.get("of_running", False)),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SavepointError(f"{where}: bad manifest field ({exc!r})") from exc


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _offsets(raw: Any) -> dict[str, dict[str, int]]:
    return {str(t): {str(p): int(o) for p, o in ps.items()} for t, ps in raw.items()}


def _check_relative(path: str, where: str) -> None:
    norm = posixpath.normpath(path)
    if path.startswith("/") or norm.startswith("..") or norm != path or "\\" in path:
        raise SavepointError(f"{where}: file path {path!r} escapes the savepoint")


@dataclass(frozen=True)
class VerifyResult:
    savepoint_id: str
    ok: bool
    problems: tuple[str, ...] = ()
    files_checked: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "savepoint_id": self.savepoint_id,
            "ok": self.ok,
            "files_checked": self.files_checked,
            "problems": list(self.problems),
        }


@dataclass(frozen=True)
class RetentionPolicy:
    max_count: int | None = None
    max_age_s: float | None = None

    def __post_init__(self) -> None:
        if self.max_count is not None and self.max_count < 1:
            raise SavepointError(f"max_count must be 1 or more, got {self.max_count}")
        if self.max_age_s is not None and self.max_age_s <= 0:
            raise SavepointError(f"max_age_s must be positive, got {self.max_age_s}")


@dataclass(frozen=True)
class PruneResult:
    kept: tuple[str, ...]
    disposed: tuple[str, ...]
    reasons: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kept": list(self.kept), "disposed": list(self.disposed), "reasons": self.reasons}


def checkpoint_files(reader: CheckpointReader, position: CheckpointPosition) -> list[str]:
    """The files a savepoint of `position` needs, relative to the checkpoint root.

    State versions above `last committed + 1` belong to a batch that never committed; Spark
    rewrites them when it re-runs that batch, so they are left out.
    """
    loc = reader.location
    max_state_version = (
        (position.latest_committed + 1) if position.latest_committed is not None else 0
    )
    chosen = [METADATA_FILE] if loc.exists(METADATA_FILE) else []
    for folder in (OFFSETS_DIR, COMMITS_DIR, SOURCES_DIR, STATE_DIR):
        for rel, _size in loc.walk_files(folder):
            name = posixpath.basename(rel)
            if is_temporary(name) or rel.startswith(CONTROL_DIR + "/"):
                continue
            if folder == STATE_DIR:
                version = state_file_version(name.removeprefix(".").removesuffix(".crc"))
                if version is not None and version > max_state_version:
                    continue
            chosen.append(rel)
    return chosen


def copy_file(src: Location, src_rel: str, dst: Location, dst_rel: str) -> tuple[int, str]:
    """Stream one file across filesystems; returns (size, sha256) of what was written."""
    digest = hashlib.sha256()
    size = 0
    dst_path = dst.path(dst_rel)
    if dst.on_local_disk:  # an object store has no folders to make (s3fs would ask the bucket)
        dst.fs.makedirs(posixpath.dirname(dst_path), exist_ok=True)
    with src.fs.open(src.path(src_rel), "rb") as fin, dst.fs.open(dst_path, "wb") as fout:
        while chunk := fin.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            fout.write(chunk)
    return size, "sha256:" + digest.hexdigest()


class SavepointStore:
    """Savepoints of any number of jobs under one root URL."""

    def __init__(self, root: str | Location) -> None:
        self.location = open_location(root) if isinstance(root, str) else root

    # -- create ---------------------------------------------------------------------

    def create(
        self,
        checkpoint: str | Location,
        *,
        job_name: str,
        force: bool = False,
        spark_version: str | None = None,
        savepoint_id: str | None = None,
        after_stop: StopRecord | None = None,
        of_running: bool = False,
    ) -> SavepointManifest:
        """Copy the checkpoint of a stopped query. `after_stop`: the stopped report the
        copy is taken after, when no driver has run since (see `belongs_to_stop`).
        `of_running`: copy a running query's checkpoint as of its last committed batch,
        without stopping it (`core/state/running_copy.py`)."""
        reader = CheckpointReader(checkpoint)
        if of_running:
            return self._create_of_running(reader, job_name, spark_version, savepoint_id)
        lease = ControlFolder(reader.location).live_lease()
        if lease is not None:
            if not force:
                raise LeaseHeldError(
                    f"{reader.url}: a live driver holds this checkpoint "
                    f"({lease.describe()}); stop the job first, or pass force=True to copy "
                    f"a checkpoint that may change under the copy"
                )
            log.warning("savepoint of %s forced while %s holds it", reader.url, lease.describe())
        position = reader.position()
        problems = reader.validate()
        if problems:
            raise CheckpointError(reader.url, f"not savepointed, inconsistent: {problems[0]}")
        created, stamp, sid, target = self._new(job_name, position.latest_committed, savepoint_id)

        def copy(rel: str) -> SavepointFile:
            size, digest = copy_file(reader.location, rel, target, posixpath.join(DATA_DIR, rel))
            return SavepointFile(rel, size, digest)

        files = target.map_files(copy, checkpoint_files(reader, position))
        manifest = SavepointManifest(
            savepoint_id=sid,
            job_name=job_name,
            query_id=position.query_id,
            last_planned_batch=position.latest_planned,
            last_committed_batch=position.latest_committed,
            pending_batch=position.pending_batch,
            offsets=offsets_json(position.committed_offsets),
            planned_offsets=offsets_json(position.planned_offsets),
            created_at=stamp.isoformat(timespec="milliseconds"),
            created_at_ms=created,
            spark_version=spark_version,
            source_checkpoint=redact_url(reader.url),
            files=tuple(files),
            forced=bool(force and lease is not None and lease.is_fresh()),
            after_stop=after_stop,
        )
        return self._publish(target, manifest)

    def _new(
        self, job_name: str, batch: int | None, savepoint_id: str | None
    ) -> tuple[int, dt.datetime, str, Location]:
        """A new savepoint's creation time, id and (empty) folder."""
        created = now_ms()
        stamp = dt.datetime.fromtimestamp(created / 1000, dt.timezone.utc)
        sid = validate_savepoint_id(
            savepoint_id
            or f"{_slug(job_name)}-{stamp.strftime('%Y%m%dT%H%M%S')}{created % 1000:03d}Z"
            f"-b{batch if batch is not None else 'none'}"
        )
        target = self.location.child(sid)
        if target.has_files():
            raise SavepointError(f"{target.url}: savepoint {sid} already exists")
        return created, stamp, sid, target

    def _publish(self, target: Location, manifest: SavepointManifest) -> SavepointManifest:
        text = json.dumps(manifest.to_dict(), indent=1, sort_keys=True)
        target.write_atomic(text, MANIFEST_FILE)
        # Published last: until this file exists the savepoint does not list.
        target.write_atomic(_manifest_digest(text), COMPLETE_FILE)
        log.info(
            "savepoint %s%s: %d files, %d bytes, committed batch %s",
            manifest.savepoint_id,
            " (of the running query)" if manifest.of_running else "",
            len(manifest.files),
            manifest.total_bytes,
            manifest.last_committed_batch,
        )
        return manifest

    def _create_of_running(
        self,
        reader: CheckpointReader,
        job_name: str,
        spark_version: str | None,
        savepoint_id: str | None,
    ) -> SavepointManifest:
        """A savepoint of a running (or stopped) query as of its last committed batch."""
        from airflow_provider_kafkaspark.core.state.running_copy import files_as_of, purgeable

        position = reader.position()
        batch = position.latest_committed
        if batch is None:
            raise NothingCommittedError(
                f"{reader.url}: no committed batch yet (commits/ is empty): a savepoint of the "
                f"running query has nothing consistent to copy; try again after its first batch"
            )
        committed = position.committed
        created, stamp, sid, target = self._new(job_name, batch, savepoint_id)

        def copy(rel: str) -> SavepointFile | None:
            try:
                size, digest = copy_file(
                    reader.location, rel, target, posixpath.join(DATA_DIR, rel)
                )
            except FileNotFoundError:
                if purgeable(rel, batch):
                    return None  # purged by the running query: older than what it needs
                raise
            return SavepointFile(rel, size, digest)

        copied = target.map_files(copy, files_as_of(reader, batch))
        files = tuple(f for f in copied if f is not None)
        problems = CheckpointReader(target.child(DATA_DIR)).validate()
        if problems:
            target.fs.rm(target.path(), recursive=True)
            raise CheckpointError(
                reader.url, f"copy as of batch {batch} inconsistent: {problems[0]}"
            )
        offsets = offsets_json(committed.kafka_offsets() if committed else {})
        manifest = SavepointManifest(
            savepoint_id=sid,
            job_name=job_name,
            query_id=position.query_id,
            last_planned_batch=batch,
            last_committed_batch=batch,
            pending_batch=None,
            offsets=offsets,
            planned_offsets=offsets,
            created_at=stamp.isoformat(timespec="milliseconds"),
            created_at_ms=created,
            spark_version=spark_version,
            source_checkpoint=redact_url(reader.url),
            files=files,
            of_running=True,
        )
        return self._publish(target, manifest)

    # -- read -------------------------------------------------------------------------

    def taken_at_batch(
        self, job_name: str, last_committed_batch: int | None
    ) -> list[SavepointManifest]:
        """Complete savepoints of `job_name` whose default id names `last_committed_batch`,
        newest first: the only ones a retried stop can have taken. The id is read before the
        manifest, so a root holding many savepoints costs one listing and a few reads."""
        batch = "none" if last_committed_batch is None else str(last_committed_batch)
        prefix, suffix = f"{_slug(job_name)}-", f"-b{batch}"
        return self._complete(
            lambda name: name.startswith(prefix) and name.endswith(suffix), job_name
        )

    def _complete(
        self, wanted: Callable[[str], bool], job_name: str | None
    ) -> list[SavepointManifest]:
        """The complete savepoints whose ids `wanted` accepts (of `job_name`, if given),
        newest first; the id is checked before anything is read."""
        found = []
        for name in self.location.listdir():
            if not (wanted(name) and _ID.match(name)):
                continue
            if not self.location.exists(name, COMPLETE_FILE):
                continue
            try:
                manifest = self.show(name)
            except SavepointError as exc:
                log.warning("skipping savepoint %s: %s", name, exc)
                continue
            if job_name is None or manifest.job_name == job_name:
                found.append(manifest)
        return sorted(found, key=lambda m: (m.created_at_ms, m.savepoint_id), reverse=True)

    def list(self, job_name: str | None = None) -> list[SavepointManifest]:
        """Complete savepoints, newest first; incomplete or unreadable ones are skipped."""
        return self._complete(lambda name: not name.startswith("."), job_name)

    def latest(self, job_name: str | None = None) -> SavepointManifest:
        found = self.list(job_name)
        if not found:
            who = f" of job {job_name}" if job_name else ""
            raise SavepointError(f"{self.location.url}: no complete savepoint{who}")
        return found[0]

    def resolve(self, ref: str, job_name: str | None = None) -> SavepointManifest:
        """A savepoint by id, or `latest` (of `job_name` when given)."""
        return self.latest(job_name) if ref == "latest" else self.show(ref)

    def show(self, savepoint_id: str) -> SavepointManifest:
        sid = validate_savepoint_id(savepoint_id)
        where = self.location.describe(sid, MANIFEST_FILE)
        if not self.location.exists(sid):
            raise SavepointError(f"{self.location.describe(sid)}: no such savepoint")
        if not self.location.exists(sid, COMPLETE_FILE):
            raise SavepointError(f"{self.location.describe(sid)}: incomplete (no {COMPLETE_FILE})")
        try:
            raw = json.loads(self.location.read_text(sid, MANIFEST_FILE))
        except StorageError as exc:
            raise SavepointError(str(exc)) from exc
        except json.JSONDecodeError as exc:
            raise SavepointError(f"{where}: not JSON ({exc.msg})") from exc
        manifest = SavepointManifest.from_dict(raw, where)
        if manifest.savepoint_id != sid:
            raise SavepointError(f"{where}: manifest is for {manifest.savepoint_id}, not {sid}")
        return manifest

    def is_in_use(self, savepoint_id: str) -> bool:
        return self.location.exists(validate_savepoint_id(savepoint_id), IN_USE_FILE)

    def mark_in_use(self, savepoint_id: str, in_use: bool = True) -> None:
        sid = self.show(savepoint_id).savepoint_id
        if in_use:
            self.location.write_atomic(str(now_ms()), sid, IN_USE_FILE)
        elif self.location.exists(sid, IN_USE_FILE):
            self.location.fs.rm(self.location.path(sid, IN_USE_FILE))

    def data_location(self, savepoint_id: str) -> Location:
        return self.location.child(validate_savepoint_id(savepoint_id), DATA_DIR)

    # -- verify -----------------------------------------------------------------------

    def verify(self, savepoint_id: str) -> VerifyResult:
        sid = validate_savepoint_id(savepoint_id)
        problems: list[str] = []
        try:
            manifest = self.show(sid)
            text = self.location.read_text(sid, MANIFEST_FILE)
            if self.location.read_text(sid, COMPLETE_FILE).strip() != _manifest_digest(text):
                problems.append(
                    f"{self.location.describe(sid, MANIFEST_FILE)}: changed after "
                    f"the savepoint was completed"
                )
        except (SavepointError, StorageError) as exc:
            return VerifyResult(sid, False, (str(exc),), 0)
        data = self.data_location(sid)
        listed = {rel for rel, _ in data.walk_files()}
        present = [f for f in manifest.files if f.path in listed]
        sums = data.map_files(lambda f: data.checksum(f.path), present)
        actual = dict(zip(present, sums, strict=True))
        for f in manifest.files:
            where = data.describe(f.path)
            if f not in actual:
                problems.append(f"{where}: missing")
            elif actual[f] != f.sha256:
                problems.append(
                    f"{where}: checksum {actual[f][:19]}... != manifest {f.sha256[:19]}..."
                )
        extra = sorted(listed - {f.path for f in manifest.files})
        if extra:
            problems.append(f"{data.describe()}: files not in the manifest: {extra[:5]}")
        return VerifyResult(sid, not problems, tuple(problems), len(manifest.files))

    def sealed(self, savepoint_id: str) -> bool:
        """Whether the manifest still matches the digest written when the savepoint was
        completed: two small reads, where `verify` reads every file."""
        sid = validate_savepoint_id(savepoint_id)
        try:
            text = self.location.read_text(sid, MANIFEST_FILE)
            return self.location.read_text(sid, COMPLETE_FILE).strip() == _manifest_digest(text)
        except StorageError as exc:
            raise SavepointError(str(exc)) from exc

    def require_verified(self, savepoint_id: str) -> SavepointManifest:
        result = self.verify(savepoint_id)
        if not result.ok:
            raise SavepointError(
                f"savepoint {savepoint_id} failed verification: " + "; ".join(result.problems[:3])
            )
        return self.show(savepoint_id)

    # -- retention --------------------------------------------------------------------

    def dispose(self, savepoint_id: str) -> None:
        """Delete a savepoint: `_COMPLETE` first, so a half-deleted one never lists."""
        sid = validate_savepoint_id(savepoint_id)
        if not self.location.exists(sid):
            raise SavepointError(f"{self.location.describe(sid)}: no such savepoint")
        if self.is_in_use(sid):
            raise SavepointError(f"{self.location.describe(sid)}: marked in use; unmark it first")
        if self.location.exists(sid, COMPLETE_FILE):
            self.location.fs.rm(self.location.path(sid, COMPLETE_FILE))
        self.location.fs.rm(self.location.path(sid), recursive=True)

    def prune(
        self,
        policy: RetentionPolicy,
        *,
        job_name: str | None = None,
        dry_run: bool = False,
        at_ms: int | None = None,
        keep: frozenset[str] = frozenset(),
    ) -> PruneResult:
        """Dispose savepoints beyond `max_count` or older than `max_age_s`; always keeps the
        newest one that verifies, any marked in use (a person's mark, or a restore running
        from it), and those in `keep` (a deployment's last stable savepoint). A protected
        savepoint still counts towards `max_count`."""
        now = now_ms() if at_ms is None else at_ms
        manifests = self.list(job_name)
        reasons: dict[str, str] = {}
        protected: set[str] = set()
        for m in manifests:
            if self.is_in_use(m.savepoint_id):
                protected.add(m.savepoint_id)
                reasons[m.savepoint_id] = "in use"
            elif m.savepoint_id in keep:
                protected.add(m.savepoint_id)
                reasons[m.savepoint_id] = KEPT_LAST_STABLE
        for m in manifests:  # newest first
            if self.verify(m.savepoint_id).ok:
                protected.add(m.savepoint_id)
                reasons.setdefault(m.savepoint_id, "newest verified")
                break
        kept, disposed = [], []
        for index, m in enumerate(manifests):
            sid = m.savepoint_id
            too_many = policy.max_count is not None and index >= policy.max_count
            too_old = (
                policy.max_age_s is not None and (now - m.created_at_ms) > policy.max_age_s * 1000
            )
            if sid in protected or not (too_many or too_old):
                kept.append(sid)
                if reasons.get(sid) == KEPT_LAST_STABLE and (too_many or too_old):
                    # Say that the policy alone would have disposed of it.
                    beyond = "beyond max_count" if too_many else "older than max_age"
                    reasons[sid] = f"{KEPT_LAST_STABLE} (the policy alone: {beyond})"
                reasons.setdefault(sid, "within policy")
                continue
            reasons[sid] = "beyond max_count" if too_many else "older than max_age"
            disposed.append(sid)
            if not dry_run:
                self.dispose(sid)
        return PruneResult(tuple(kept), tuple(disposed), reasons)


def driver_since_stop(
    stopped: StoppedReport, lease: Lease | None, marker: SubmittedMarker | None
) -> bool:
    """Whether a driver may have run on the checkpoint since `stopped` was written: a lease
    file of another owner (live or expired: it ran), or a submit after the report. The
    stopped driver's own lease may still be there for a moment (the report ends it)."""
    if lease is not None and lease.owner_id != stopped.owner_id:
        return True
    return marker is not None and marker.submitted_at_ms > stopped.stopped_at_ms


def belongs_to_stop(
    manifest: SavepointManifest,
    stopped: StoppedReport,
    position: CheckpointPosition,
    *,
    lease: Lease | None,
    marker: SubmittedMarker | None,
) -> bool:
    """Whether `manifest` is the savepoint taken after the stop `stopped` reports, of the
    checkpoint as it still is: its record names the same driver and stop time and batches,
    no driver has run since (`driver_since_stop`), and the checkpoint is at the same query
    and batches. Such a savepoint is what a retried stop returns instead of copying the
    same batch again; any other is a different stop's, or of a job started again since."""
    record = manifest.after_stop
    if record is None or manifest.forced:
        return False
    if record != StopRecord.of(stopped):
        return False
    if driver_since_stop(stopped, lease, marker):
        return False
    return (
        manifest.query_id == position.query_id
        and manifest.last_committed_batch == position.latest_committed
        and manifest.last_planned_batch == position.latest_planned
    )


def _manifest_digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
