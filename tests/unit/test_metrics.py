"""Metric names pass Airflow's own stat name checks whatever the job and topic are called,
and go out through Airflow's stats client (a recording backend in its place); a failing
client never reaches the caller."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from airflow.sdk._shared.observability.metrics import stats as sdk_stats
from airflow.sdk._shared.observability.metrics.validators import (
    stat_name_default_handler,
    stat_name_otel_handler,
)

from airflow_provider_kafkaspark import metrics
from airflow_provider_kafkaspark.metrics import (
    MAX_NAME_CHARS,
    job_gauge_values,
    slo_alert_counter,
    slo_gauge_value,
    stat_part,
    stat_tag,
)

LONG = "x" * 300


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("ip_count", "ip_count"),
        ("orders.v2", "orders_v2"),  # a dot would add a level to the name
        ("my job/é", "my_job__"),
        ("", "_"),
        ("a-b_C9", "a-b_C9"),
    ],
)
def test_stat_part_keeps_only_allowed_characters(given: str, expected: str) -> None:
    assert stat_part(given, 60) == expected


def test_stat_part_bounds_long_names_and_keeps_them_apart() -> None:
    a, b = stat_part(LONG + "a", 60), stat_part(LONG + "b", 60)
    assert len(a) == len(b) == 60 and a != b
    assert a.startswith("x" * 50)
    assert stat_part(LONG, 60) == stat_part(LONG, 60)  # stable across calls and processes


def test_stat_tag_keeps_dots_and_bounds_length() -> None:
    assert stat_tag("orders.v2 eu") == "orders.v2_eu"
    assert len(stat_tag(LONG)) == 100 and stat_tag("") == "_"


def test_job_gauges_names_values_and_tags() -> None:
    found = job_gauge_values(
        "ip_count",
        lag_by_topic={"events.eu": 7, "clicks": 3},
        seconds_since_commit=12.5,
        batch_duration_ms=830,
        lag_commit_failures=2,
    )
    assert [(m.name, m.value) for m in found] == [
        ("kafkaspark.ip_count.lag_records.clicks", 3.0),
        ("kafkaspark.ip_count.lag_records.events_eu", 7.0),
        ("kafkaspark.ip_count.lag_records", 10.0),
        ("kafkaspark.ip_count.seconds_since_commit", 12.5),
        ("kafkaspark.ip_count.batch_duration_ms", 830.0),
        ("kafkaspark.ip_count.lag_commit_failures", 2.0),
    ]
    assert found[1].tags == {"job": "ip_count", "topic": "events.eu"}
    assert found[2].tags == {"job": "ip_count"}


def test_unknown_figures_are_left_out_not_sent_as_zero() -> None:
    assert (
        job_gauge_values("j", lag_by_topic=None, seconds_since_commit=None, batch_duration_ms=None)
        == []
    )


@pytest.mark.parametrize("job", ["ip_count", "Orders.EU/v2 (prod)", LONG, "ü" * 80])
def test_every_name_passes_airflows_stat_name_checks(job: str) -> None:
    names = [
        m.name
        for m in job_gauge_values(
            job, lag_by_topic={LONG: 1, "t.x": 2}, seconds_since_commit=1.0, batch_duration_ms=1
        )
    ]
    names += [slo_gauge_value(job, in_breach=True).name, slo_alert_counter(job, "breach").name]
    for name in names:
        assert len(name) <= MAX_NAME_CHARS
        assert stat_name_default_handler(name) == name  # StatsD: raises when invalid
        stat_name_otel_handler("airflow", name)  # OpenTelemetry: raises when invalid
        assert name.startswith("kafkaspark.") and name.count(".") in (2, 3)


class Recorder:
    """Stands in for the StatsD client behind Airflow's `Stats`."""

    def __init__(self, fail: bool = False) -> None:
        self.sent: list[tuple[str, str, float, dict[str, Any]]] = []
        self.fail = fail

    def gauge(self, stat: str, value: float, **kwargs: Any) -> None:
        if self.fail:
            raise OSError("statsd socket closed")
        self.sent.append(("gauge", stat, value, kwargs.get("tags") or {}))

    def incr(self, stat: str, count: int = 1, **kwargs: Any) -> None:
        if self.fail:
            raise OSError("statsd socket closed")
        self.sent.append(("incr", stat, count, kwargs.get("tags") or {}))


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    saved = (sdk_stats._factory, sdk_stats._backend, sdk_stats._export_legacy_names)
    made = Recorder()
    sdk_stats.initialize(factory=lambda: made, export_legacy_names=False)  # type: ignore[arg-type, return-value]
    try:
        yield made
    finally:
        sdk_stats._factory, sdk_stats._backend, sdk_stats._export_legacy_names = saved


def test_gauges_and_counts_go_through_airflows_stats_client(recorder: Recorder) -> None:
    metrics.job_gauges(
        "ip_count", lag_by_topic={"t": 5}, seconds_since_commit=2.0, batch_duration_ms=None
    )
    metrics.slo_breached("ip_count", in_breach=True)
    metrics.count_slo_alert("ip_count", "clear")
    assert recorder.sent == [
        ("gauge", "kafkaspark.ip_count.lag_records.t", 5.0, {"job": "ip_count", "topic": "t"}),
        ("gauge", "kafkaspark.ip_count.lag_records", 5.0, {"job": "ip_count"}),
        ("gauge", "kafkaspark.ip_count.seconds_since_commit", 2.0, {"job": "ip_count"}),
        ("gauge", "kafkaspark.ip_count.slo_breached", 1.0, {"job": "ip_count"}),
        ("incr", "kafkaspark.ip_count.slo_clear", 1, {"job": "ip_count"}),
    ]


def test_a_failing_stats_client_never_reaches_the_caller(recorder: Recorder) -> None:
    recorder.fail = True
    metrics.job_gauges("j", lag_by_topic={"t": 1}, seconds_since_commit=1.0, batch_duration_ms=1)
    metrics.count_slo_alert("j", "breach")
    assert recorder.sent == []
