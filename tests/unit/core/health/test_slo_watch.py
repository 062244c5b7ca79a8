"""The SLO watcher's poll (pure): the driver's end comes first, a clean stop ends quietly and
any other end fails; otherwise the SLO rules speak. Its settings and its event."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.core.health.inputs import WatchInputs
from airflow_provider_kafkaspark.core.health.slo import SloSettings, SloState
from airflow_provider_kafkaspark.core.health.slo_inputs import WatcherInputs
from airflow_provider_kafkaspark.core.health.slo_watch import (
    SloWatch,
    WatcherEvent,
    WatcherSettings,
    job_name_of,
    stopped_cleanly,
    watch_summary,
)
from airflow_provider_kafkaspark.errors import InvalidArgumentError, InvalidInputError
from tests.unit.airflow_helpers import T0, lease, obs

OWNER = "a" * 32


def settings(**kwargs: Any) -> WatcherSettings:
    values: dict[str, Any] = {"max_lag_records": 100, "clear_after_s": 0, "startup_grace_s": 30}
    values.update(kwargs)
    return WatcherSettings.checked("w", **values)


def running(at: int, committed: int, lag: int, kafka_error: str | None = None) -> WatcherInputs:
    observation = None if kafka_error else obs(at, committed, lag=lag)
    return WatcherInputs(
        WatchInputs(observation, lease(started=T0 - 60_000, beat=at), None),
        committed,
        None if kafka_error else {"t": lag},
        kafka_error=kafka_error,
    )


def gone(at: int, *, clean: bool, exit_code: int | None = 0, reason: str = "stop") -> WatcherInputs:
    report = StoppedReport(
        stopped_at_ms=at - 1000,
        reason=reason,
        clean=clean,
        last_planned_batch=9,
        last_committed_batch=9,
        owner_id=OWNER,
        exit_code=exit_code,
    )
    return WatcherInputs(WatchInputs(obs(at, 9), None, report), 9, {"t": 0})


def test_breach_and_clear_pass_through_as_alerts() -> None:
    watch = SloWatch(settings(), since_batch=None)
    first = watch.poll(running(T0, 5, lag=50), T0)
    assert first.state == "watching" and first.phase == "SLOs met"
    assert "lag 50 records" in first.reason
    breach = watch.poll(running(T0 + 1000, 6, lag=500), T0 + 1000)
    assert breach.state == "alert" and breach.alert is not None
    assert breach.alert.kind == "breach" and breach.phase == "in breach (lag)"
    clear = watch.poll(running(T0 + 2000, 7, lag=0), T0 + 2000)
    assert clear.state == "alert" and clear.alert is not None and clear.alert.kind == "clear"


def test_kafka_not_answering_is_an_unknown_lag_in_the_log_line() -> None:
    watch = SloWatch(settings(), since_batch=None)
    step = watch.poll(running(T0, 5, lag=0, kafka_error="Kafka timed out after 10 s"), T0)
    assert step.state == "watching" and step.phase == "SLOs met, lag unknown"
    assert "lag unknown (Kafka timed out after 10 s)" in step.reason


def test_a_clean_stop_ends_the_watch_once_no_driver_came_back() -> None:
    watch = SloWatch(settings(restart_grace_s=60), since_batch=None)
    watch.poll(running(T0, 8, lag=500), T0)  # in breach: the end does not wait for a clear
    waiting = watch.poll(gone(T0 + 5000, clean=True), T0 + 5000)
    assert waiting.state == "watching" and waiting.phase == "stopped cleanly, waiting for a restart"
    assert "(0 of 60 s)" in waiting.reason and "clean" in waiting.reason
    assert watch.poll(gone(T0 + 35_000, clean=True), T0 + 35_000).state == "watching"
    step = watch.poll(gone(T0 + 65_000, clean=True), T0 + 65_000)
    assert step.state == "stopped" and "driver gone" in step.reason and "clean" in step.reason
    assert watch.state.breached  # the summary says it ended in breach


def test_a_new_driver_after_a_clean_stop_is_followed_and_its_end_judged_anew() -> None:
    watch = SloWatch(settings(restart_grace_s=60), since_batch=None)
    watch.poll(running(T0, 8, lag=0), T0)
    assert watch.poll(gone(T0 + 5000, clean=True), T0 + 5000).state == "watching"
    # A restart window's new driver takes the lease: the SLOs are watched again.
    new = lease("b" * 32, started=T0 + 20_000, beat=T0 + 30_000)
    back = WatcherInputs(WatchInputs(obs(T0 + 30_000, 9, lag=500), new, None), 9, {"t": 500})
    step = watch.poll(back, T0 + 30_000)
    assert step.state == "alert" and step.alert is not None and step.alert.kind == "breach"
    assert watch.stopped_seen_ms is None
    # The new driver fails: not the old clean report, its own end decides.
    crashed = StoppedReport(
        T0 + 39_000, "query failed", False, 10, 9, owner_id="b" * 32, exit_code=1
    )
    step = watch.poll(WatcherInputs(WatchInputs(None, None, crashed), 9, None), T0 + 40_000)
    assert step.state == "failed" and "query failed" in step.reason


@pytest.mark.parametrize(
    ("clean", "exit_code", "reason"),
    [(False, 2, "stop"), (True, 4, "bad job"), (True, 1, "query failed")],
)
def test_any_other_end_fails_the_watch_at_once(clean: bool, exit_code: int, reason: str) -> None:
    watch = SloWatch(settings(restart_grace_s=600), since_batch=None)
    watch.poll(running(T0, 8, lag=0), T0)
    step = watch.poll(gone(T0 + 5000, clean=clean, exit_code=exit_code, reason=reason), T0 + 5000)
    assert step.state == "failed" and reason in step.reason


def test_a_lease_that_expires_without_a_report_fails_the_watch() -> None:
    watch = SloWatch(settings(), since_batch=None)
    watch.poll(running(T0, 8, lag=0), T0)
    stale = WatcherInputs(
        WatchInputs(obs(T0 + 120_000, 8), lease(started=T0 - 60_000, beat=T0), None), 8, {"t": 0}
    )
    step = watch.poll(stale, T0 + 120_000)
    assert step.state == "failed" and "expired" in step.reason


def test_stopped_cleanly_needs_a_clean_exit() -> None:
    def report(clean: bool, code: int | None) -> StoppedReport:
        return StoppedReport(T0, "stop", clean, 1, 1, exit_code=code)

    assert stopped_cleanly(report(True, 0)) and stopped_cleanly(report(True, None))
    assert not stopped_cleanly(report(False, 0)) and not stopped_cleanly(report(True, 2))


def test_settings_round_trip_flat_and_check_each_value() -> None:
    given = settings(max_commit_age_s=60, poll_interval_s=5, renotify_after_s=None)
    flat = json.loads(json.dumps(given.to_dict()))
    assert flat["max_commit_age_s"] == 60 and flat["poll_interval_s"] == 5
    assert flat["restart_grace_s"] == 300 and flat["startup_grace_s"] == 30
    assert WatcherSettings.from_dict(flat) == given
    assert given.slo == SloSettings.checked(
        "x", max_lag_records=100, max_commit_age_s=60, clear_after_s=0, renotify_after_s=None
    )
    with pytest.raises(InvalidArgumentError, match="w: poll_interval_s"):
        settings(poll_interval_s=0)
    with pytest.raises(InvalidArgumentError, match="w: restart_grace_s"):
        settings(restart_grace_s=-1)
    with pytest.raises(InvalidArgumentError, match="w: give max_lag_records"):
        WatcherSettings.checked("w", poll_interval_s=5)


def test_event_round_trips_and_refuses_a_malformed_one() -> None:
    watch = SloWatch(settings(), since_batch=None)
    step = watch.poll(running(T0, 6, lag=500), T0)
    event = WatcherEvent("alert", step.reason, step.alert, watch.state.to_dict(), 12.5)
    data = json.loads(json.dumps(event.to_dict()))
    assert WatcherEvent.from_dict(data) == event
    for broken in ({**data, "state": "exploded"}, {**data, "slo_state": []}, {"state": "alert"}):
        with pytest.raises(InvalidInputError, match="watcher event: malformed"):
            WatcherEvent.from_dict(broken)


def test_summary_says_how_the_watch_ended() -> None:
    state = SloState(breached=True, breached_slos=("lag",), breaches=2, lag_records=900)
    summary = watch_summary("stopped", "driver gone: stopped", state, 3600.04)
    assert summary == {
        "state": "stopped",
        "reason": "driver gone: stopped",
        "breaches": 2,
        "in_breach": True,
        "breached_slos": ["lag"],
        "lag_records": 900,
        "commit_age_s": None,
        "latest_committed": None,
        "watched_s": 3600.0,
    }


def test_job_name_of_a_checkpoint() -> None:
    assert job_name_of("/tmp/kafkaspark/ip_count/checkpoint") == "ip_count"
    assert job_name_of("s3://bucket/jobs/ip_count/checkpoint/") == "ip_count"
    assert job_name_of("/data/cp_orders") == "cp_orders"
    assert job_name_of("/") == "job"
