"""Retention of the backups restores leave: `<checkpoint>.backup-<UTC stamp>` siblings of a
checkpoint (`restore.move_aside`), on local disk or an object store.

Which to dispose is decided from the names alone (`select_backups`, pure): the stamp in the
name is when the restore moved the checkpoint aside. Only names of exactly that form are
ever considered; the checkpoint itself and anything else beside it are never touched. The
newest backup is always kept: it holds the run the last restore replaced.
"""

from __future__ import annotations

import datetime as dt
import logging
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_kafkaspark.core.state.savepoint import RetentionPolicy
from airflow_provider_kafkaspark.core.storage.location import Location, open_location
from airflow_provider_kafkaspark.errors import StorageError

log = logging.getLogger(__name__)

BACKUP_INFIX = ".backup-"
# `move_aside`'s stamp: "%Y%m%dT%H%M%S%fZ" (microseconds, six digits).
_STAMP = re.compile(r"^(\d{8}T\d{6})(\d{6})Z$")


def backup_stamp_ms(checkpoint_name: str, name: str) -> int | None:
    """When the backup `name` of the checkpoint folder `checkpoint_name` was made (epoch
    ms); None when `name` is not exactly `<checkpoint_name>.backup-<stamp>`."""
    prefix = checkpoint_name + BACKUP_INFIX
    if not checkpoint_name or not name.startswith(prefix):
        return None
    match = _STAMP.match(name[len(prefix) :])
    if match is None:
        return None
    try:
        moment = dt.datetime.strptime(match.group(1), "%Y%m%dT%H%M%S").replace(
            tzinfo=dt.timezone.utc
        )
    except ValueError:
        return None
    return int(moment.timestamp() * 1000) + int(match.group(2)) // 1000


@dataclass(frozen=True)
class BackupDecision:
    kept: tuple[str, ...]
    disposed: tuple[str, ...]
    reasons: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kept": list(self.kept), "disposed": list(self.disposed), "reasons": self.reasons}


def select_backups(
    checkpoint_name: str, names: list[str], policy: RetentionPolicy, now_ms: int
) -> BackupDecision:
    """Which of `names` (entries beside the checkpoint) to dispose under `policy`: those
    beyond `max_count` (newest first) or older than `max_age_s`, never the newest one.
    Names that are not backups of this checkpoint are neither kept nor disposed: they are
    not reported at all."""
    stamped = sorted(
        ((stamp, name) for name in names if (stamp := backup_stamp_ms(checkpoint_name, name))),
        reverse=True,
    )
    kept: list[str] = []
    disposed: list[str] = []
    reasons: dict[str, str] = {}
    for index, (stamp, name) in enumerate(stamped):
        too_many = policy.max_count is not None and index >= policy.max_count
        too_old = policy.max_age_s is not None and (now_ms - stamp) > policy.max_age_s * 1000
        if index == 0:
            kept.append(name)
            reasons[name] = "newest backup"
        elif too_many or too_old:
            disposed.append(name)
            reasons[name] = "beyond max_count" if too_many else "older than max_age"
        else:
            kept.append(name)
            reasons[name] = "within policy"
    return BackupDecision(tuple(kept), tuple(disposed), reasons)


class RestoreBackups:
    """The restore backups beside one checkpoint: list them, dispose of one."""

    def __init__(self, checkpoint: str | Location) -> None:
        location = open_location(checkpoint) if isinstance(checkpoint, str) else checkpoint
        root = location.root.rstrip("/")
        self.checkpoint = location
        self.name = posixpath.basename(root)
        parent_root = posixpath.dirname(root)
        parent_url = location.url.rstrip("/").rsplit("/", 1)[0]
        # A checkpoint at the top of a bucket or filesystem has no folder to hold backups.
        self.parent: Location | None = (
            Location(location.fs, parent_root, parent_url)
            if parent_root and parent_root != root and self.name
            else None
        )

    def names(self) -> list[str]:
        """The backups that hold files. An object store that keeps emptied folders
        (SeaweedFS) still lists a disposed backup's name; with nothing in it, it is none."""
        if self.parent is None:
            return []
        parent = self.parent
        return [
            n
            for n in parent.listdir()
            if backup_stamp_ms(self.name, n) is not None and parent.has_files(n)
        ]

    def url(self, name: str) -> str:
        assert self.parent is not None
        return self.parent.describe(name)

    def dispose(self, name: str) -> None:
        if self.parent is None or backup_stamp_ms(self.name, name) is None:
            raise StorageError(
                f"{self.checkpoint.url}: {name!r} is not one of its restore backups "
                f"({self.name}{BACKUP_INFIX}<stamp>); not deleted"
            )
        self.parent.fs.rm(self.parent.path(name), recursive=True)
        log.info("disposed restore backup %s", self.url(name))

    def prune(
        self, policy: RetentionPolicy, *, now_ms: int, dry_run: bool = False
    ) -> BackupDecision:
        decision = select_backups(self.name, self.names(), policy, now_ms)
        if not dry_run:
            for name in decision.disposed:
                self.dispose(name)
        return decision
