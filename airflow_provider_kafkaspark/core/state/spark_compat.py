"""Which Spark may continue a checkpoint another Spark wrote: a pure rule over versions.

Spark keeps a streaming checkpoint readable by later releases: the offset and commit logs of
3.5 and 4.0 are both format version 1, and 4.0 reads 3.5's state store files (the upgrade path
users take). It promises nothing the other way: a 4.0 checkpoint may carry what 3.5 does not
know (newer state formats, offset-log settings it ignores or rejects). So a driver of an earlier
major.minor than the newest one that wrote a checkpoint is refused; patch releases of one line
are interchangeable (3.5.3 and 3.5.7 read each other's checkpoints).
"""

from __future__ import annotations

import re

_RELEASE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


def release_line(version: str) -> tuple[int, int] | None:
    """(major, minor) of a Spark version string ('3.5.7', '4.0.0-preview1'); None if it is
    not one."""
    match = _RELEASE.match(version.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def newest(versions: list[str | None]) -> str | None:
    """The newest Spark of the given ones (None and unparsable ones are ignored)."""
    known = [v for v in versions if v and release_line(v) is not None]
    return max(known, key=lambda v: release_line(v) or (0, 0), default=None)


def continue_refusal(written_by: str | None, runs_on: str | None) -> str | None:
    """Why a driver of Spark `runs_on` must not continue a checkpoint last written by Spark
    `written_by`, or None when it may (or when either is unknown: nothing to go by)."""
    if not written_by or not runs_on:
        return None
    wrote, runs = release_line(written_by), release_line(runs_on)
    if wrote is None or runs is None or runs >= wrote:
        return None
    return (
        f"the checkpoint was written by Spark {written_by} and the driver runs Spark "
        f"{runs_on}: Spark reads an earlier release's checkpoint, not a later one's. Run the "
        f"job on Spark {wrote[0]}.{wrote[1]} or later, or restore the savepoint in 'offsets' "
        f"mode (a new checkpoint at its committed offsets, without its state)"
    )
