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

Restarts of a driver by its own restart policy (the local supervisor, YARN's attempts, the
Kubernetes Job) happen between tasks, where no operator sees them: they are not counted here
(the local supervisor records its `attempt` in the control folder's `supervisor.json`,
`kafkaspark job status` shows a YARN application's attempts). A metrics
call never raises: a deployment's metrics must not fail a job's task.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from airflow_provider_kafkaspark.metrics import MAX_JOB_CHARS, PREFIX, stat_part, stat_tag

log = logging.getLogger(__name__)


def stat_job(job_name: str) -> str:
    """The job's level of a name, as the watcher's metrics (`metrics.py`) name it."""
    return stat_part(job_name, MAX_JOB_CHARS)


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


def _send(kind: Literal["incr", "gauge"], job_name: str, metric: str, value: int) -> None:
    """One metric through Airflow's stats client, tagged with the job as the watcher's are
    (StatsD drops tags unless InfluxDB tags are on); a failure is logged, never raised."""
    name = stat_name(job_name, metric)
    tags = {"job": stat_tag(job_name)}
    try:
        from airflow.sdk.observability.stats import Stats

        if kind == "incr":
            Stats.incr(name, value, tags=tags)
        else:
            Stats.gauge(name, value, tags=tags)
    except Exception as exc:  # noqa: BLE001 - metrics never fail a task
        log.warning("metric %s not sent: %s", name, exc)


def count(job_name: str, counts: Mapping[str, int]) -> None:
    for metric, value in counts.items():
        _send("incr", job_name, metric, value)


def savepoint_gauges(job_name: str, *, savepoints: int | None, savepoint_bytes: int) -> None:
    """After a savepoint: its size, and the job's complete savepoints when they were counted."""
    gauges = {"savepoint_bytes": savepoint_bytes}
    if savepoints is not None:
        gauges["savepoints"] = savepoints
    for metric, value in gauges.items():
        _send("gauge", job_name, metric, value)


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
