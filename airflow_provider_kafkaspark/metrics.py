"""The metrics this provider emits, named in one place, sent through Airflow's own stats
client (`airflow.sdk.observability.stats.Stats`: StatsD, Datadog or OpenTelemetry as the
`[metrics]` section of airflow.cfg says; nothing when metrics are off).

StatsD has no tags unless Airflow's InfluxDB tags are on, so the job and the topic are part
of each name (`kafkaspark.<job>.lag_records.<topic>`); they are also given as tags, which the
OpenTelemetry and Datadog backends (and StatsD with InfluxDB tags) keep. Names follow Airflow's
stat name rules (ASCII letters, digits, `_`, `.`, `-`; at most 250 characters, 255 with the
prefix for OpenTelemetry): each part is cleaned by `stat_part` and bounded, so that a job or
topic name never makes a metric be dropped.

Airflow initializes this client in every process that runs provider code: the task runner,
and the triggerer (its trigger runner imports `airflow.sdk.serde`, which initializes it from
the same configuration), so triggers emit too. A metric call never raises: metrics are never
worth failing a watch for.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass

log = logging.getLogger(__name__)

PREFIX = "kafkaspark"
# Below Airflow's limits (250 for StatsD, 255 with the `airflow.` prefix for OpenTelemetry),
# with room for a longer configured prefix.
MAX_NAME_CHARS = 200
MAX_JOB_CHARS = 60
MAX_TOPIC_CHARS = 100
_NOT_IN_PART = re.compile(r"[^A-Za-z0-9_-]")
_NOT_IN_TAG = re.compile(r"[^A-Za-z0-9_.-]")


def stat_part(text: str, max_chars: int) -> str:
    """`text` as one dot-free part of a stat name: each character outside
    `[A-Za-z0-9_-]` becomes `_` (a dot would add a level to the name); a part longer than
    `max_chars` keeps its start and gets an 8-character digest of the whole, so that two long
    names stay apart."""
    cleaned = _NOT_IN_PART.sub("_", text) or "_"
    if len(cleaned) <= max_chars:
        return cleaned
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{cleaned[: max(1, max_chars - 9)]}_{digest}"


def stat_tag(text: str) -> str:
    """A tag value every backend takes (InfluxDB tags join the name, under its rules)."""
    return _NOT_IN_TAG.sub("_", text)[:MAX_TOPIC_CHARS] or "_"


@dataclass(frozen=True)
class Metric:
    name: str
    value: float
    tags: dict[str, str]


def _name(job_name: str, *parts: str) -> str:
    return ".".join((PREFIX, stat_part(job_name, MAX_JOB_CHARS), *parts))


def job_gauge_values(
    job_name: str,
    *,
    lag_by_topic: Mapping[str, int] | None,
    seconds_since_commit: float | None,
    batch_duration_ms: int | None,
    lag_commit_failures: int | None = None,
) -> list[Metric]:
    """The gauges of one job at one moment (unknown figures are left out, not sent as 0):
    `kafkaspark.<job>.lag_records.<topic>`, `kafkaspark.<job>.lag_records` (their sum),
    `kafkaspark.<job>.seconds_since_commit`, `kafkaspark.<job>.batch_duration_ms`,
    `kafkaspark.<job>.lag_commit_failures` (the driver's lag commits failed in a row: 0 while
    the lag group follows the job)."""
    job = {"job": stat_tag(job_name)}
    found: list[Metric] = []
    if lag_by_topic is not None:
        for topic, records in sorted(lag_by_topic.items()):
            found.append(
                Metric(
                    _name(job_name, "lag_records", stat_part(topic, MAX_TOPIC_CHARS)),
                    float(records),
                    {**job, "topic": stat_tag(topic)},
                )
            )
        found.append(Metric(_name(job_name, "lag_records"), float(sum(lag_by_topic.values())), job))
    if seconds_since_commit is not None:
        found.append(Metric(_name(job_name, "seconds_since_commit"), seconds_since_commit, job))
    if batch_duration_ms is not None:
        found.append(Metric(_name(job_name, "batch_duration_ms"), float(batch_duration_ms), job))
    if lag_commit_failures is not None:
        found.append(
            Metric(_name(job_name, "lag_commit_failures"), float(lag_commit_failures), job)
        )
    return found


def slo_gauge_value(job_name: str, *, in_breach: bool) -> Metric:
    """`kafkaspark.<job>.slo_breached`: 1 while a watcher holds an SLO breached, else 0."""
    return Metric(
        _name(job_name, "slo_breached"), 1.0 if in_breach else 0.0, {"job": stat_tag(job_name)}
    )


def slo_alert_counter(job_name: str, kind: str) -> Metric:
    """`kafkaspark.<job>.slo_breach` / `.slo_clear`: counted at each announcement."""
    return Metric(_name(job_name, f"slo_{stat_part(kind, 20)}"), 1.0, {"job": stat_tag(job_name)})


def job_gauges(
    job_name: str,
    *,
    lag_by_topic: dict[str, int] | None,
    seconds_since_commit: float | None,
    batch_duration_ms: int | None,
    lag_commit_failures: int | None = None,
) -> None:
    """Emit the job's gauges (see `job_gauge_values`); never raises."""
    gauges(
        job_gauge_values(
            job_name,
            lag_by_topic=lag_by_topic,
            seconds_since_commit=seconds_since_commit,
            batch_duration_ms=batch_duration_ms,
            lag_commit_failures=lag_commit_failures,
        )
    )


def slo_breached(job_name: str, *, in_breach: bool) -> None:
    gauges([slo_gauge_value(job_name, in_breach=in_breach)])


def count_slo_alert(job_name: str, kind: str) -> None:
    """Count one announcement of a breach or an all-clear; never raises."""
    metric = slo_alert_counter(job_name, kind)
    try:
        from airflow.sdk.observability.stats import Stats

        Stats.incr(metric.name, tags=metric.tags)
    except Exception:  # a metric is never worth failing the caller for
        log.debug("metric %s not sent", metric.name, exc_info=True)


def gauges(metrics: list[Metric]) -> None:
    """Send gauges; never raises (one that fails does not stop the others)."""
    try:
        from airflow.sdk.observability.stats import Stats
    except Exception:  # an Airflow without the SDK stats client
        log.debug("Airflow's stats client is not available", exc_info=True)
        return
    for metric in metrics:
        try:
            Stats.gauge(metric.name, metric.value, tags=metric.tags)
        except Exception:  # a metric is never worth failing the caller for
            log.debug("metric %s not sent", metric.name, exc_info=True)
