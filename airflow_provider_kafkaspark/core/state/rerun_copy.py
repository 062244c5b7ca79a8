"""A copy of a running query's checkpoint that makes the next driver run its last committed
batch again: what the upgrade's compatibility check runs the new code against.

The copy as of committed batch N (`running_copy`) without `commits/N` and without the state
versions N+1 that batch wrote: batch N is then planned (`offsets/N`) but not committed, and
a query started on the copy runs it again from the same offsets. Spark loads the state of
version N into the new code's operators and runs them over one real batch, so whatever Spark
checks when it reads old state (schemas, operators, partitioning) is checked, and the state
versions N+1 the re-run writes say which stateful operators the new code has.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass

from airflow_provider_kafkaspark.core.state.checkpoint import (
    COMMITS_DIR,
    STATE_DIR,
    CheckpointReader,
    state_file_version,
)
from airflow_provider_kafkaspark.core.state.running_copy import (
    files_as_of,
    log_batch,
    purgeable,
    wanted_as_of,
)
from airflow_provider_kafkaspark.core.storage.location import Location
from airflow_provider_kafkaspark.errors import CheckpointError


def _state_version(name: str) -> int | None:
    return state_file_version(name.removeprefix(".").removesuffix(".crc"))


def wanted_for_rerun(rel: str, batch: int) -> bool:
    """Whether the checkpoint file `rel` belongs in a copy that re-runs committed batch
    `batch`: the copy as of `batch`, less `commits/<batch>` and the state versions
    `batch + 1` (what the re-run writes again)."""
    if not wanted_as_of(rel, batch):
        return False
    folder = rel.split("/", 1)[0]
    name = posixpath.basename(rel)
    if folder == COMMITS_DIR:
        return log_batch(name) != batch
    if folder == STATE_DIR:
        return _state_version(name) != batch + 1
    return True


def stateful_operators(rels: Iterable[str], version: int | None = None) -> list[int]:
    """The stateful operator ids with a state file (`state/<operator>/<partition>/<file>`)
    among `rels`; of state version `version` only, when given."""
    found: set[int] = set()
    for rel in rels:
        parts = rel.split("/")
        if len(parts) < 4 or parts[0] != STATE_DIR or not parts[1].isdigit():
            continue
        if not parts[2].isdigit():  # `_metadata`, schema folders
            continue
        file_version = _state_version(parts[-1])
        if file_version is None or (version is not None and file_version != version):
            continue
        found.add(int(parts[1]))
    return sorted(found)


def operators_change(old: list[int], new: list[int]) -> str | None:
    """Why the stateful operators of the new code do not match the old checkpoint's, or
    None when they do: the state of an operator that vanished would be lost, an operator
    added reads no state of its own."""
    if old == new:
        return None
    return f"changed number of stateful operators: old {old}, new {new}"


@dataclass(frozen=True)
class RerunCopy:
    """A copy made by `copy_for_rerun`: the batch it re-runs, the stateful operators of
    the source checkpoint as of that batch, and how many files were copied."""

    batch: int
    old_operators: list[int]
    files: int


def copy_for_rerun(reader: CheckpointReader, target: Location) -> RerunCopy | None:
    """Copy the checkpoint `reader` reads (a running query's, or a stopped one's) into the
    empty `target` so that a query started there re-runs its last committed batch. None
    when it has committed no batch yet (nothing to re-run; `target` is left untouched)."""
    from airflow_provider_kafkaspark.core.state.savepoint import copy_file

    position = reader.position()
    batch = position.latest_committed
    if batch is None:
        return None
    if target.has_files():
        raise CheckpointError(target.url, "the copy's location is not empty")
    as_of = files_as_of(reader, batch)
    old_operators = stateful_operators(as_of)
    chosen = [rel for rel in as_of if wanted_for_rerun(rel, batch)]

    def copy(rel: str) -> bool:
        try:
            copy_file(reader.location, rel, target, rel)
        except FileNotFoundError:
            if purgeable(rel, batch):
                return False  # purged by the running query: older than what it needs
            raise
        return True

    copied = sum(target.map_files(copy, chosen))
    problems = CheckpointReader(target).validate()
    if problems:
        raise CheckpointError(
            reader.url, f"copy to re-run batch {batch} inconsistent: {problems[0]}"
        )
    return RerunCopy(batch, old_operators, copied)
