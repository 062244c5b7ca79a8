"""Where the exactly-once sink lets a test crash the job the way a crashed machine would.

Set `KAFKASPARK_CRASH_AT=<point>:<batch id>` in the environment of the driver before the
SparkSession starts (the JVM, and the Python workers it forks in local mode, inherit it).
When the sink reaches that point of that batch, `maybe_crash` kills the job with SIGKILL
(`devtools/crash_hooks.py`, which a source checkout has and the runtime wheel does not).
Nothing gets a chance to clean up: no `finally`, no producer close, no Spark commit log.

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
    from airflow_provider_kafkaspark.devtools.crash_hooks import crash_now

    crash_now(point, batch_id, marker=os.environ.get(CRASH_MARKER_ENV, ""), driver_pid=driver_pid)
