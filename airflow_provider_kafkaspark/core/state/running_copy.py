"""Which files make a consistent copy of a running query's checkpoint as of its last committed
batch, without stopping it.

A running driver appends to its checkpoint while the copy is made: it plans batch N+1
(`offsets/N+1`), writes its state (version N+2), commits it, and purges what falls out of
`minBatchesToRetain`. A copy as of committed batch N takes only what batch N left behind:
`offsets/` and `commits/` up to N, state versions up to N+1 (batch N wrote version N+1), the
sources and the metadata. Everything it takes is written once and never rewritten by Spark,
so files copied one by one still make the checkpoint of one moment. A file purged while
the copy runs is one older than the oldest Spark needs to restart; it is left out.

Restored in checkpoint mode, such a copy continues after batch N exactly as a savepoint taken
after a stop at batch N would; batches the running job committed since are run again by
the restored query (as after any rollback).
"""

from __future__ import annotations

import posixpath

from airflow_provider_kafkaspark.core.control.folder import CONTROL_DIR
from airflow_provider_kafkaspark.core.state.checkpoint import (
    COMMITS_DIR,
    METADATA_FILE,
    OFFSETS_DIR,
    SOURCES_DIR,
    STATE_DIR,
    CheckpointReader,
    state_file_version,
)


def log_batch(name: str) -> int | None:
    """The batch an `offsets/` or `commits/` file belongs to (`7`, `.7.crc`), else None."""
    core = name.removeprefix(".").removesuffix(".crc")
    return int(core) if core.isdigit() else None


def is_temporary(name: str) -> bool:
    """A file Spark is writing, renamed into place when done: `.15.delta.<uuid>.TID58.tmp`,
    and its checksum `..15.delta.<uuid>.TID58.tmp.crc`. It vanishes under a copy."""
    return name.removesuffix(".crc").endswith(".tmp")


def wanted_as_of(rel: str, batch: int) -> bool:
    """Whether the checkpoint file `rel` (relative to the root) belongs in a copy as of
    committed batch `batch`: no log entry after it, no state version after `batch + 1`, no
    temporary file, nothing of the control folder."""
    name = posixpath.basename(rel)
    if is_temporary(name) or rel.startswith(CONTROL_DIR + "/"):
        return False
    folder = rel.split("/", 1)[0]
    if folder in (OFFSETS_DIR, COMMITS_DIR):
        entry = log_batch(name)
        return entry is None or entry <= batch
    if folder == STATE_DIR:
        version = state_file_version(name.removeprefix(".").removesuffix(".crc"))
        return version is None or version <= batch + 1
    return True


def files_as_of(reader: CheckpointReader, batch: int) -> list[str]:
    """The files of a copy as of committed batch `batch`, relative to the checkpoint root."""
    loc = reader.location
    chosen = [METADATA_FILE] if loc.exists(METADATA_FILE) else []
    for folder in (OFFSETS_DIR, COMMITS_DIR, SOURCES_DIR, STATE_DIR):
        chosen += [rel for rel, _size in loc.walk_files(folder) if wanted_as_of(rel, batch)]
    return chosen


def purgeable(rel: str, batch: int) -> bool:
    """Whether Spark may remove `rel` while a copy as of `batch` is made: a log entry or a
    state version older than the batch itself (Spark keeps the newest ones it restarts from)."""
    name = posixpath.basename(rel)
    folder = rel.split("/", 1)[0]
    if folder in (OFFSETS_DIR, COMMITS_DIR):
        entry = log_batch(name)
        return entry is not None and entry < batch
    if folder == STATE_DIR:
        version = state_file_version(name.removeprefix(".").removesuffix(".crc"))
        return version is not None and version <= batch
    return False
