"""Where the exactly-once sink lets a test crash the job the way a crashed machine would.

Set `KAFKASPARK_CRASH_AT=<point>:<batch id>` in the environment of the driver before the
SparkSession starts (the JVM, and the Python workers it forks in local mode, inherit it).
When the sink reaches that point of that batch, `maybe_crash` kills the job with SIGKILL
(`crash_now`): the driver's process group (the Python driver and its JVM) and the caller's own
group (in local mode the Python workers live in a group of their own, made by pyspark's
daemon). Nothing gets a chance to clean up: no `finally`, no producer close, no Spark commit
log. The hook ships in the wheel because executors import it, but only the environment arms
it, and only tests set that environment.

`KAFKASPARK_CRASH_MARKER=<path>` (optional) makes the crash happen once: the file is created
just before the kill, and a crash point whose marker file exists does nothing. A test
restarts the same job with the same environment and it runs through.

Points the sink uses:
- `during_sink_write`: executor side, task 0, after about half of its rows were produced
  (and flushed to the broker) inside the open transaction, before the commit. The driver
  arms it when the batch starts (`SinkTaskConfig.crash`); the task's own environment, which
  it inherits in local mode, must name it too.
- `after_sink_commit`: driver side, after every task of the batch committed its
  transaction, before foreachBatch returns, i.e. before Spark writes `commits/<batch id>`.

Never set these variables in production: the whole point is to lose the process.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from pathlib import Path

CRASH_AT_ENV = "KAFKASPARK_CRASH_AT"
CRASH_MARKER_ENV = "KAFKASPARK_CRASH_MARKER"

DURING_SINK_WRITE = "during_sink_write"
AFTER_SINK_COMMIT = "after_sink_commit"
CRASH_POINTS = (DURING_SINK_WRITE, AFTER_SINK_COMMIT)


def crash_armed(env: Mapping[str, str], point: str, batch_id: int) -> bool:
    """True if `env` asks for a crash at `point` of batch `batch_id` (marker ignored)."""
    wanted = env.get(CRASH_AT_ENV, "").strip()
    return bool(wanted) and wanted == f"{point}:{batch_id}"


def should_crash(env: Mapping[str, str], point: str, batch_id: int) -> bool:
    """True if `env` asks for a crash here and the crash marker file does not exist yet."""
    if not crash_armed(env, point, batch_id):
        return False
    marker = env.get(CRASH_MARKER_ENV, "").strip()
    return not (marker and Path(marker).exists())


def maybe_crash(point: str, batch_id: int, *, driver_pid: int | None = None) -> None:
    """Kill the job if `KAFKASPARK_CRASH_AT` names this point and batch; else return at once.

    `driver_pid`: the Spark driver's pid, passed by executor-side callers (see `crash_now`)."""
    if not should_crash(os.environ, point, batch_id):
        return
    crash_now(point, batch_id, marker=os.environ.get(CRASH_MARKER_ENV, ""), driver_pid=driver_pid)


def crash_now(point: str, batch_id: int, *, marker: str, driver_pid: int | None) -> None:
    """Write the crash marker (if any) and SIGKILL the job.

    The driver's process group is killed first, but only if `driver_pid` is an ancestor of
    this process (local mode): a worker on another machine must never signal a process group
    that merely shares the number."""
    marker = marker.strip()
    if marker:
        Path(marker).parent.mkdir(parents=True, exist_ok=True)
        Path(marker).write_text(f"{point}:{batch_id} pid={os.getpid()}\n")
    own_group = os.getpgrp()
    if driver_pid is not None and _is_ancestor(driver_pid):
        driver_group = _process_group(driver_pid)
        if driver_group is not None and driver_group != own_group:
            os.killpg(driver_group, signal.SIGKILL)
    os.killpg(own_group, signal.SIGKILL)


def _process_group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def _is_ancestor(pid: int) -> bool:
    """True if `pid` is this process or one of its ancestors (read from /proc)."""
    current = os.getpid()
    for _ in range(64):
        if current == pid:
            return True
        if current <= 1:
            return False
        try:
            stat = Path(f"/proc/{current}/stat").read_text()
        except OSError:
            return False
        # The command name may hold spaces and parentheses: split after the last ')'.
        current = int(stat.rsplit(")", 1)[1].split()[1])
    return False
