"""StreamingWatchTrigger: serialization, argument checks, the events its run fires, the state
it carries on, and the gauges each poll sends."""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from airflow.triggers.base import TriggerEvent

from airflow_provider_kafkaspark import metrics
from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.core.health.inputs import WatchInputs
from airflow_provider_kafkaspark.core.health.slo import SloState
from airflow_provider_kafkaspark.core.health.slo_inputs import WatcherInputs
from airflow_provider_kafkaspark.core.health.slo_watch import WatcherEvent, WatchStep
from airflow_provider_kafkaspark.errors import InvalidArgumentError, InvalidInputError
from airflow_provider_kafkaspark.triggers import watch as trigger_module
from airflow_provider_kafkaspark.triggers.watch import CLASSPATH, StreamingWatchTrigger
from tests.unit.airflow_helpers import SECRET, first_event_closed_elsewhere, lease, obs


def make_trigger(**kwargs: Any) -> StreamingWatchTrigger:
    args: dict[str, Any] = {
        "checkpoint": "/data/ip_count/checkpoint",
        "job_name": "ip_count",
        "kafka_conn_id": "kafka_unit",
        "max_lag_records": 100,
        "clear_after_s": 0,
        "poll_interval_s": 0.01,
        "timeout_s": 30,
    }
    args.update(kwargs)
    return StreamingWatchTrigger(**args)


def feed(monkeypatch: pytest.MonkeyPatch, lags: Iterator[int | None]) -> list[str]:
    """Polls that see a live driver and the next lag (None: Kafka did not answer)."""
    seen: list[str] = []

    def inputs(checkpoint: str, kafka: object) -> WatcherInputs:
        seen.append(checkpoint)
        now = trigger_module.now_ms()
        lag = next(lags)
        live = lease(started=now - 60_000, beat=now)
        if lag is None:
            return WatcherInputs(WatchInputs(None, live, None), 3, None, kafka_error="timed out")
        return WatcherInputs(WatchInputs(obs(now, 3, lag=lag), live, None), 3, {"t": lag}, 900)

    monkeypatch.setattr(trigger_module, "read_watcher_inputs", inputs)
    return seen


async def collect(trigger: StreamingWatchTrigger) -> list[TriggerEvent]:
    return [event async for event in trigger.run()]


def test_serialize_round_trip_without_connection_values() -> None:
    trigger = make_trigger(slo_state=SloState().to_dict(), watched_s=12.0, since_batch="4")
    path, kwargs = trigger.serialize()
    assert path == CLASSPATH
    assert json.loads(json.dumps(kwargs)) == kwargs
    assert kwargs["since_batch"] == 4 and kwargs["max_lag_records"] == 100
    assert "bootstrap.servers" not in json.dumps(kwargs)
    module, name = path.rsplit(".", 1)
    again = getattr(importlib.import_module(module), name)(**kwargs)
    assert again.serialize() == (path, kwargs)


def test_bad_arguments_are_refused_where_the_trigger_is_built() -> None:
    with pytest.raises(InvalidArgumentError, match="give max_lag_records"):
        make_trigger(max_lag_records=None)
    with pytest.raises(InvalidInputError, match="SLO state: malformed"):
        make_trigger(slo_state={"breached": "maybe"})


def test_fires_at_the_first_breach_with_the_state_to_carry_on(
    kafka_unit_conn: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    feed(monkeypatch, iter([10, 50, 500, 600]))
    (event,) = asyncio.run(collect(make_trigger()))
    resumed = WatcherEvent.from_dict(event.payload)
    assert resumed.state == "alert" and resumed.alert is not None
    assert resumed.alert.kind == "breach" and resumed.alert.lag_records == 500
    assert resumed.slo_state["breached"] is True and resumed.watched_s > 0
    assert SECRET not in json.dumps(event.payload)


def test_a_carried_breach_clears_in_the_next_trigger(
    kafka_unit_conn: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    feed(monkeypatch, iter([500]))
    (first,) = asyncio.run(collect(make_trigger()))
    carried = first.payload["slo_state"]
    feed(monkeypatch, iter([400, 300, 20]))
    (event,) = asyncio.run(collect(make_trigger(slo_state=carried, watched_s=5.0)))
    resumed = WatcherEvent.from_dict(event.payload)
    assert resumed.state == "alert" and resumed.alert is not None
    assert resumed.alert.kind == "clear" and resumed.watched_s > 5.0
    assert resumed.slo_state["breaches"] == 1 and resumed.slo_state["breached"] is False


def test_unknown_lag_neither_breaches_nor_ends_the_watch(
    kafka_unit_conn: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    polls = feed(monkeypatch, iter([None] * 10_000))
    (event,) = asyncio.run(collect(make_trigger(timeout_s=0.2)))
    assert event.payload["state"] == "timeout" and len(polls) >= 3
    assert "lag unknown (timed out)" in event.payload["reason"]
    assert event.payload["slo_state"]["breached"] is False


def test_a_clean_stop_and_a_failed_driver_end_the_trigger(
    kafka_unit_conn: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for clean, state in ((True, "stopped"), (False, "failed")):
        report = StoppedReport(
            trigger_module.now_ms() - 1000, "stop request", clean, 9, 9, owner_id="a" * 32
        )

        def inputs(checkpoint: str, kafka: object, report: StoppedReport = report) -> WatcherInputs:
            return WatcherInputs(WatchInputs(None, None, report), 9, {"t": 0})

        monkeypatch.setattr(trigger_module, "read_watcher_inputs", inputs)
        (event,) = asyncio.run(collect(make_trigger(restart_grace_s=0.05)))
        assert event.payload["state"] == state and "driver gone" in event.payload["reason"]


def test_bad_input_ends_the_trigger_with_an_invalid_event(
    kafka_unit_conn: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(checkpoint: str, kafka: object) -> WatcherInputs:
        raise InvalidInputError(f"{checkpoint}/commits/3: truncated")

    monkeypatch.setattr(trigger_module, "read_watcher_inputs", broken)
    (event,) = asyncio.run(collect(make_trigger()))
    assert event.payload["state"] == "invalid"
    assert "commits/3: truncated" in event.payload["reason"]


def test_each_poll_sends_the_jobs_gauges(
    kafka_unit_conn: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(metrics, "job_gauges", lambda job, **figures: sent.append((job, figures)))
    feed(monkeypatch, iter([10, 20, 500]))
    asyncio.run(collect(make_trigger()))
    assert [figures["lag_by_topic"] for _, figures in sent] == [{"t": 10}, {"t": 20}, {"t": 500}]
    assert {job for job, _ in sent} == {"ip_count"}
    assert all(f["batch_duration_ms"] == 900 for _, f in sent)
    assert all(f["seconds_since_commit"] is not None for _, f in sent)


def test_closes_from_another_task_than_the_one_that_read_its_event(
    kafka_unit_conn: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    feed(monkeypatch, iter([500]))
    assert first_event_closed_elsewhere(make_trigger())["state"] == "alert"


def test_status_log_writes_info_only_when_the_phase_changes() -> None:
    lines: list[tuple[str, str]] = []

    class Log:
        def info(self, msg: Any, /, *args: Any) -> None:
            lines.append(("info", msg % args))

        def debug(self, msg: Any, /, *args: Any) -> None:
            lines.append(("debug", msg % args))

    status = trigger_module.StatusLog(Log(), "ip_count")
    for phase, figures in (("SLOs met", "lag 1"), ("SLOs met", "lag 2"), ("in breach", "lag 9")):
        status.watching(WatchStep("watching", f"{phase}; {figures}", None, phase))
    assert lines == [
        ("info", "watch of ip_count: SLOs met; lag 1"),
        ("debug", "watch of ip_count: SLOs met; lag 2"),
        ("info", "watch of ip_count: in breach; lag 9"),
    ]
