"""What the operators count, through Airflow's own stats client (StatsD, Datadog or
OpenTelemetry, as `[metrics]` configures the deployment; nothing when it configures none).

    kafkaspark.<job>.submits           counter  a submit or deploy started a driver
    kafkaspark.<job>.restarts          counter  a submit replaced a running driver
                                                (if_running="replace"), or a deploy upgraded
                                                the running job (stopped it, started the new spec)
    kafkaspark.<job>.stops             counter  a stop task stopped a running driver
    kafkaspark.<job>.savepoints        gauge    complete savepoints of the job in the
                                                savepoint root, after a savepoint
    kafkaspark.<job>.savepoint_bytes   gauge    the size of the savepoint just taken

Restarts of a driver by its own supervisor or by YARN happen between tasks; the job watcher
sees those. A metrics call never raises: a deployment's metrics must not fail a job's task.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping
from typing import Any, Literal

log = logging.getLogger(__name__)

PREFIX = "kafkaspark"
# The job's part of a name as the job watcher's metrics name it (`metrics.stat_part`), so
# that one job's metrics share one name level: StatsD names take letters, digits, `_`, `-`
# and `.`; a `.` in a job name would add a level, so it becomes `_` too; a long name keeps
# its start and a digest of the whole (Airflow drops a name over 250 characters).
MAX_JOB_CHARS = 60
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_-]")


def stat_job(job_name: str) -> str:
    cleaned = _NOT_IN_NAME.sub("_", job_name) or "_"
    if len(cleaned) <= MAX_JOB_CHARS:
        return cleaned
    digest = hashlib.sha256(job_name.encode()).hexdigest()[:8]
    return f"{cleaned[: MAX_JOB_CHARS - 9]}_{digest}"


def stat_name(job_name: str, metric: str) -> str:
    return f"{PREFIX}.{stat_job(job_name)}.{metric}"


def submit_counts(handle: Mapping[str, Any]) -> dict[str, int]:
    """Counters of one submit's handle: a driver started unless an earlier try of the task
    had started it (`adopted`), and a restart when it replaced a running one."""
    if handle.get("adopted"):
        return {}
    counts = {"submits": 1}
    if handle.get("replaced"):
        counts["restarts"] = 1
    return counts


def deploy_counts(result: Mapping[str, Any]) -> dict[str, int]:
    """Counters of one deploy's result: `submit` started the job, `upgrade` restarted it
    with another spec; `noop` and `refuse` touched nothing."""
    action = result.get("action")
    if action == "submit":
        return submit_counts(result.get("handle") or {})
    if action == "upgrade":
        return {"submits": 1, "restarts": 1}
    return {}


def _send(kind: Literal["incr", "gauge"], name: str, value: int) -> None:
    """One metric through Airflow's stats client; a failure is logged, never raised."""
    try:
        from airflow.sdk.observability.stats import Stats

        if kind == "incr":
            Stats.incr(name, value)
        else:
            Stats.gauge(name, value)
    except Exception as exc:  # noqa: BLE001 - metrics never fail a task
        log.warning("metric %s not sent: %s", name, exc)


def count(job_name: str, counts: Mapping[str, int]) -> None:
    for metric, value in counts.items():
        _send("incr", stat_name(job_name, metric), value)


def savepoint_gauges(job_name: str, *, savepoints: int | None, savepoint_bytes: int) -> None:
    """After a savepoint: its size, and the job's complete savepoints when they were counted."""
    gauges = {"savepoint_bytes": savepoint_bytes}
    if savepoints is not None:
        gauges["savepoints"] = savepoints
    for metric, value in gauges.items():
        _send("gauge", stat_name(job_name, metric), value)


def count_savepoints(savepoint_root: str, job_name: str) -> int | None:
    """The job's complete savepoints in `savepoint_root` (reads each manifest); None when
    they cannot be listed."""
    from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore
    from airflow_provider_kafkaspark.errors import KafkaSparkError

    try:
        return len(SavepointStore(savepoint_root).list(job_name))
    except (KafkaSparkError, OSError) as exc:
        log.warning("savepoints of %s not counted: %s", job_name, exc)
        return None
