"""Reading a Spark Structured Streaming checkpoint (Spark 3.x/4.x layout) over fsspec.

Layout (docs/design.md): `metadata` ({"id": query id}), `offsets/<batch>` (write-ahead
log: `v1`, batch metadata JSON, one line per source), `commits/<batch>` (`v1`,
{"nextBatchWatermarkMs": ...}), `sources/<n>/...`, `state/<operator>/<partition>/...`.

`position()` is what sensors poll: it lists `offsets/` and `commits/` once each and reads at
most four small files, however much history is retained.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_kafkaspark.core.kafka.offsets import (
    TopicOffsets,
    offsets_json,
    parse_kafka_offsets,
)
from airflow_provider_kafkaspark.core.storage.location import Location, open_location
from airflow_provider_kafkaspark.errors import CheckpointError, InvalidInputError, StorageError

OFFSETS_DIR = "offsets"
COMMITS_DIR = "commits"
SOURCES_DIR = "sources"
STATE_DIR = "state"
METADATA_FILE = "metadata"
SUPPORTED_LOG_VERSION = 1
_STATE_FILE = re.compile(r"^(\d+)(?:_[0-9a-fA-F-]+)?\.(delta|snapshot|zip|changelog)$")


@dataclass(frozen=True)
class SourceOffset:
    index: int
    raw: str | None  # None when Spark wrote "-" (the source had no offset yet)
    kafka: TopicOffsets | None  # parsed when the line is the Kafka source's JSON form

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "kafka": offsets_json(self.kafka) if self.kafka is not None else None,
            "raw": None if self.kafka is not None else self.raw,
        }


@dataclass(frozen=True)
class OffsetLogEntry:
    batch_id: int
    watermark_ms: int
    timestamp_ms: int
    conf: dict[str, str]
    sources: tuple[SourceOffset, ...]

    def kafka_offsets(self) -> TopicOffsets:
        """Offsets of every Kafka source of the batch, merged (topics are unique per query)."""
        merged: TopicOffsets = {}
        for source in self.sources:
            for topic, parts in (source.kafka or {}).items():
                merged.setdefault(topic, {}).update(parts)
        return merged


@dataclass(frozen=True)
class CommitLogEntry:
    batch_id: int
    next_watermark_ms: int


@dataclass(frozen=True)
class CheckpointPosition:
    url: str
    query_id: str
    latest_planned: int | None
    latest_committed: int | None
    retained_planned: tuple[int, int] | None
    retained_committed: tuple[int, int] | None
    planned: OffsetLogEntry | None
    committed: OffsetLogEntry | None  # the offsets entry of the latest committed batch
    commit: CommitLogEntry | None

    @classmethod
    def empty(cls, url: str) -> CheckpointPosition:
        """The position of a query that never wrote its checkpoint."""
        return cls(url, "", None, None, None, None, None, None, None)

    @property
    def pending_batch(self) -> int | None:
        """The planned batch Spark will re-run on restart (planned, not committed)."""
        if self.latest_planned is None:
            return None
        if self.latest_committed is None or self.latest_planned > self.latest_committed:
            return self.latest_planned
        return None

    @property
    def committed_offsets(self) -> TopicOffsets:
        return self.committed.kafka_offsets() if self.committed else {}

    @property
    def planned_offsets(self) -> TopicOffsets:
        return self.planned.kafka_offsets() if self.planned else {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "checkpoint": self.url,
            "query_id": self.query_id,
            "latest_planned_batch": self.latest_planned,
            "latest_committed_batch": self.latest_committed,
            "pending_batch": self.pending_batch,
            "retained_planned": list(self.retained_planned) if self.retained_planned else None,
            "retained_committed": (
                list(self.retained_committed) if self.retained_committed else None
            ),
            "committed_offsets": offsets_json(self.committed_offsets),
            "planned_offsets": offsets_json(self.planned_offsets),
            "batch_timestamp_ms": self.planned.timestamp_ms if self.planned else None,
            "watermark_ms": self.planned.watermark_ms if self.planned else None,
            "next_watermark_ms": self.commit.next_watermark_ms if self.commit else None,
        }


@dataclass(frozen=True)
class StatePartition:
    operator: str
    partition: str
    versions: tuple[int, ...]
    files: int
    bytes: int


@dataclass(frozen=True)
class StateLayout:
    partitions: tuple[StatePartition, ...] = field(default_factory=tuple)

    @property
    def operators(self) -> list[str]:
        return sorted({p.operator for p in self.partitions})

    @property
    def total_bytes(self) -> int:
        return sum(p.bytes for p in self.partitions)

    @property
    def latest_version(self) -> int | None:
        versions = [v for p in self.partitions for v in p.versions]
        return max(versions) if versions else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "operators": {
                op: {
                    "partitions": sum(1 for p in self.partitions if p.operator == op),
                    "bytes": sum(p.bytes for p in self.partitions if p.operator == op),
                    "latest_version": max(
                        (v for p in self.partitions if p.operator == op for v in p.versions),
                        default=None,
                    ),
                }
                for op in self.operators
            },
            "total_bytes": self.total_bytes,
        }


def state_file_version(name: str) -> int | None:
    """The state version of a state store file name (`12.delta`, `12.zip`, ...), else None."""
    match = _STATE_FILE.match(name)
    return int(match.group(1)) if match else None


class CheckpointReader:
    """Read-only view of one checkpoint location. Never writes outside `_kafkaspark/`."""

    def __init__(self, location: str | Location) -> None:
        self.location = open_location(location) if isinstance(location, str) else location

    @property
    def url(self) -> str:
        return self.location.url

    # -- whole-checkpoint facts ------------------------------------------------------

    def exists(self) -> bool:
        return self.location.exists(METADATA_FILE) or self.location.has_files(OFFSETS_DIR)

    def query_id(self) -> str:
        where = self.location.describe(METADATA_FILE)
        try:
            text = self.location.read_text(METADATA_FILE)
        except StorageError as exc:
            if not self.location.exists():
                raise CheckpointError(self.url, "no checkpoint at this location") from exc
            raise CheckpointError(where, "missing: not a Spark checkpoint, or not started") from exc
        lines = [line for line in text.splitlines() if line.strip()]
        try:
            raw = json.loads(lines[0]) if lines else None
        except json.JSONDecodeError as exc:
            raise CheckpointError(where, f"not JSON ({exc.msg})") from exc
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not raw["id"]:
            raise CheckpointError(where, 'expected {"id": "<query id>"}')
        return str(raw["id"])

    def planned_batches(self) -> list[int]:
        return self._batch_ids(OFFSETS_DIR)

    def committed_batches(self) -> list[int]:
        return self._batch_ids(COMMITS_DIR)

    def listed_batches(self) -> tuple[list[int], list[int]]:
        """The planned and the committed batch ids, the commits listed first: Spark writes a
        batch's offsets file before its commit file, so every commit seen then has its
        offsets in the listing after. (Listed the other way round, a batch planned and
        committed between the two listings looked committed without offsets: the scale
        benchmark's 200 jobs failed health watches so.)"""
        committed = self.committed_batches()
        return self.planned_batches(), committed

    def position(self) -> CheckpointPosition:
        query_id = self.query_id()
        planned, committed = self.listed_batches()
        latest_planned = planned[-1] if planned else None
        latest_committed = committed[-1] if committed else None
        if latest_committed is not None and (
            latest_planned is None or latest_committed > latest_planned
        ):
            raise CheckpointError(
                self.location.describe(COMMITS_DIR, str(latest_committed)),
                f"batch {latest_committed} is committed but has no offsets/{latest_committed}",
            )
        planned_entry = self.offset_entry(latest_planned) if latest_planned is not None else None
        committed_entry: OffsetLogEntry | None = None
        commit_entry: CommitLogEntry | None = None
        if latest_committed is not None:
            committed_entry = (
                planned_entry
                if latest_committed == latest_planned
                else self.offset_entry(latest_committed)
            )
            commit_entry = self.commit_entry(latest_committed)
        return CheckpointPosition(
            url=self.url,
            query_id=query_id,
            latest_planned=latest_planned,
            latest_committed=latest_committed,
            retained_planned=(planned[0], planned[-1]) if planned else None,
            retained_committed=(committed[0], committed[-1]) if committed else None,
            planned=planned_entry,
            committed=committed_entry,
            commit=commit_entry,
        )

    def validate(self) -> list[str]:
        """Every consistency problem of the retained logs (reads every retained file).

        `position()` checks the latest entries only; this is the full check `inspect
        --verify` and savepoint creation use.
        """
        problems: list[str] = []
        planned, committed = self.listed_batches()
        for name, ids in ((OFFSETS_DIR, planned), (COMMITS_DIR, committed)):
            gaps = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids)) if ids else []
            if gaps:
                problems.append(f"{self.location.describe(name)}: batches missing {gaps[:10]}")
        orphans = sorted(set(committed) - set(planned))
        if orphans and (not planned or orphans[-1] > planned[-1]):
            problems.append(
                f"{self.location.describe(COMMITS_DIR)}: batches {orphans[:10]} committed "
                f"without offsets"
            )
        # One small file per batch: on an object store each read is a round trip, so they
        # run concurrently there (map_files), in batch order in the result.
        for read, batches in ((self.offset_entry, planned), (self.commit_entry, committed)):
            found = self.location.map_files(functools.partial(_problem_of, read), batches)
            problems += [problem for problem in found if problem]
        return problems

    # -- single log entries --------------------------------------------------------

    def offset_entry(self, batch_id: int) -> OffsetLogEntry:
        where = self.location.describe(OFFSETS_DIR, str(batch_id))
        lines = self._log_lines(OFFSETS_DIR, batch_id)
        if len(lines) < 2:
            raise CheckpointError(where, "truncated: expected a version line and batch metadata")
        meta = _json_object(lines[1], where, "batch metadata (line 2)")
        try:
            watermark = int(meta.get("batchWatermarkMs", 0))
            timestamp = int(meta.get("batchTimestampMs", 0))
        except (TypeError, ValueError) as exc:
            raise CheckpointError(where, f"bad batch metadata values: {exc}") from exc
        conf = meta.get("conf", {})
        if not isinstance(conf, dict):
            raise CheckpointError(where, "batch metadata 'conf' is not an object")
        sources = []
        for index, line in enumerate(lines[2:]):
            text = line.strip()
            if text == "-":
                sources.append(SourceOffset(index, None, None))
                continue
            raw = _json_any(text, where, f"source {index} offsets (line {index + 3})")
            kafka: TopicOffsets | None = None
            if isinstance(raw, dict) and raw and all(isinstance(v, dict) for v in raw.values()):
                try:
                    kafka = parse_kafka_offsets(raw, where=f"{where} source {index}")
                except InvalidInputError as exc:
                    raise CheckpointError(where, str(exc)) from exc
            sources.append(SourceOffset(index, text, kafka))
        return OffsetLogEntry(
            batch_id=batch_id,
            watermark_ms=watermark,
            timestamp_ms=timestamp,
            conf={str(k): str(v) for k, v in conf.items()},
            sources=tuple(sources),
        )

    def commit_entry(self, batch_id: int) -> CommitLogEntry:
        where = self.location.describe(COMMITS_DIR, str(batch_id))
        lines = self._log_lines(COMMITS_DIR, batch_id)
        meta = _json_object(lines[1], where, "commit metadata (line 2)") if len(lines) > 1 else {}
        try:
            return CommitLogEntry(batch_id, int(meta.get("nextBatchWatermarkMs", 0)))
        except (TypeError, ValueError) as exc:
            raise CheckpointError(where, f"bad nextBatchWatermarkMs: {exc}") from exc

    # -- state -------------------------------------------------------------------------

    def state_layout(self) -> StateLayout:
        grouped: dict[tuple[str, str], tuple[set[int], int, int]] = {}
        for rel, size in self.location.walk_files(STATE_DIR):
            parts = rel.split("/")
            # state/<operator>/<partition>/<file...>; skip _metadata and schema folders
            if len(parts) < 4 or not parts[2].isdigit():
                continue
            key = (parts[1], parts[2])
            versions, files, total = grouped.get(key, (set(), 0, 0))
            version = state_file_version(parts[-1])
            if version is not None:
                versions.add(version)
            grouped[key] = (versions, files + 1, total + size)
        return StateLayout(
            tuple(
                StatePartition(op, part, tuple(sorted(v)), n, size)
                for (op, part), (v, n, size) in sorted(
                    grouped.items(), key=lambda kv: (kv[0][0], int(kv[0][1]))
                )
            )
        )

    # -- internals ----------------------------------------------------------------------

    def _batch_ids(self, folder: str) -> list[int]:
        # Spark's local checksum filesystem leaves `.N.crc` beside `N`; temp files start
        # with a dot too. Only all-digit names are log entries.
        return sorted(int(name) for name in self.location.listdir(folder) if name.isdigit())

    def _log_lines(self, folder: str, batch_id: int) -> list[str]:
        where = self.location.describe(folder, str(batch_id))
        try:
            text = self.location.read_text(folder, str(batch_id))
        except StorageError as exc:
            raise CheckpointError(where, str(exc).rsplit(": ", 1)[-1]) from exc
        lines = text.splitlines()
        if not lines or not lines[0].strip():
            raise CheckpointError(where, "empty log entry")
        version = lines[0].strip()
        match = re.fullmatch(r"v(\d+)", version)
        if not match:
            raise CheckpointError(where, f"bad log version line {version[:20]!r}")
        if int(match.group(1)) > SUPPORTED_LOG_VERSION:
            raise CheckpointError(
                where,
                f"log version {version} is newer than this package reads "
                f"(v{SUPPORTED_LOG_VERSION})",
            )
        return lines


def _json_any(text: str, where: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CheckpointError(where, f"{what} is not JSON ({exc.msg})") from exc


def _json_object(text: str, where: str, what: str) -> dict[str, Any]:
    raw = _json_any(text, where, what)
    if not isinstance(raw, dict):
        raise CheckpointError(where, f"{what} is not a JSON object")
    return raw


def _problem_of(read: Callable[[int], object], batch: int) -> str | None:
    """What is wrong with one log entry, or None."""
    try:
        read(batch)
    except CheckpointError as exc:
        return str(exc)
    return None
