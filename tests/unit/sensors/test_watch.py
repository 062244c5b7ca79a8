"""StreamingWatchSensor: arguments, deferral, what `execute_complete` does with each event
(notifiers called with the alert, a failing one not losing the watch, the state carried into
the next deferral), and a whole watch in poke mode."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar, cast

import pytest
from airflow.sdk import BaseNotifier, Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException, TaskDeferred

from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.core.health.inputs import WatchInputs
from airflow_provider_kafkaspark.core.health.slo_inputs import WatcherInputs
from airflow_provider_kafkaspark.core.health.slo_watch import EventState, SloWatch, WatcherEvent
from airflow_provider_kafkaspark.errors import InvalidArgumentError
from airflow_provider_kafkaspark.sensors.watch import DEFAULT_TIMEOUT_S, StreamingWatchSensor
from airflow_provider_kafkaspark.triggers import watch as trigger_module
from airflow_provider_kafkaspark.triggers.watch import StreamingWatchTrigger
from tests.unit.airflow_helpers import T0, lease, obs


class Recording(BaseNotifier):
    """A real notifier that keeps what it rendered (in a class list: each announcement calls
    a copy of it)."""

    template_fields = ("message",)
    sent: ClassVar[list[str]] = []

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def notify(self, context: Context) -> None:
        Recording.sent.append(self.message)


class Broken(BaseNotifier):
    def notify(self, context: Context) -> None:
        raise ConnectionError("smtp server unreachable")


@pytest.fixture(autouse=True)
def no_sent() -> Iterator[None]:
    Recording.sent.clear()
    yield
    Recording.sent.clear()


def sensor(**kwargs: Any) -> StreamingWatchSensor:
    args: dict[str, Any] = {
        "task_id": "watch",
        "checkpoint": "/data/ip_count/checkpoint",
        "kafka_conn_id": "kafka_unit",
        "max_lag_records": 100,
        "clear_after_s": 0,
        "deferrable": True,
        "on_breach": [Recording("{{ kafkaspark_job }} breach {{ slo_alert.lag_records }}")],
        "on_clear": [Recording("{{ kafkaspark_job }} clear after {{ slo_alert.notification }}")],
    }
    args.update(kwargs)
    return StreamingWatchSensor(**args)


def running(at: int, lag: int) -> WatcherInputs:
    live = lease(started=T0 - 60_000, beat=at)
    return WatcherInputs(WatchInputs(obs(at, 5, lag=lag), live, None), 5, {"t": lag})


def alert_events(*lags: int, **settings: Any) -> list[dict[str, Any]]:
    """The events a trigger would fire, one per alert, from real polls a second apart."""
    watch = SloWatch(sensor(**settings).settings, since_batch=None)
    events = []
    for i, lag in enumerate(lags):
        step = watch.poll(running(T0 + i * 1000, lag), T0 + i * 1000)
        if step.alert is not None:
            event = WatcherEvent("alert", step.reason, step.alert, watch.state.to_dict(), 60.0 * i)
            events.append(event.to_dict())
    return events


def context() -> Context:
    return cast(Context, {"run_id": "r1"})


def test_arguments_are_checked_at_construction() -> None:
    with pytest.raises(InvalidArgumentError, match="give checkpoint, or handle"):
        StreamingWatchSensor(task_id="w", max_lag_records=1)
    with pytest.raises(InvalidArgumentError, match="w: give max_lag_records, max_commit_age_s"):
        StreamingWatchSensor(task_id="w", checkpoint="/cp")
    with pytest.raises(InvalidArgumentError, match="w: on_breach: str is neither"):
        StreamingWatchSensor(task_id="w", checkpoint="/cp", max_lag_records=1, on_breach=["x"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="mode"):
        StreamingWatchSensor(task_id="w", checkpoint="/cp", max_lag_records=1, mode="reschedule")
    plain = StreamingWatchSensor(task_id="w", checkpoint="/cp", max_commit_age_s=60)
    assert plain.timeout == DEFAULT_TIMEOUT_S == 86_400 and plain.poke_interval == 30
    one = StreamingWatchSensor(task_id="w", checkpoint="/cp", max_lag_records=1, on_clear=print)
    assert one.on_clear == (print,) and one.on_breach == ()


def test_execute_defers_to_the_watch_trigger() -> None:
    watcher = sensor(poll_interval_s=5, timeout=600)
    with pytest.raises(TaskDeferred) as deferred:
        watcher.execute(context())
    assert deferred.value.method_name == "execute_complete"
    assert deferred.value.timeout is not None and deferred.value.timeout.total_seconds() == 720
    trigger = deferred.value.trigger
    assert isinstance(trigger, StreamingWatchTrigger)
    _, kwargs = trigger.serialize()
    assert kwargs["job_name"] == "ip_count"  # from .../ip_count/checkpoint
    assert kwargs["poll_interval_s"] == 5 and kwargs["timeout_s"] == 600
    assert kwargs["slo_state"] is None and kwargs["watched_s"] == 0


def test_the_handle_names_checkpoint_job_and_since_batch() -> None:
    handle = {"checkpoint": "/data/cp", "job_name": "orders", "since_batch": 41}
    watcher = StreamingWatchSensor(
        task_id="w", handle=json.dumps(handle), max_lag_records=1, deferrable=True
    )
    with pytest.raises(TaskDeferred) as deferred:
        watcher.execute(context())
    _, kwargs = deferred.value.trigger.serialize()
    assert (kwargs["checkpoint"], kwargs["job_name"], kwargs["since_batch"]) == (
        "/data/cp",
        "orders",
        41,
    )


def test_a_breach_calls_the_breach_notifiers_and_defers_again_with_the_state() -> None:
    called: list[dict[str, Any]] = []
    watcher = sensor(
        on_breach=[
            Broken(),
            Recording("{{ kafkaspark_job }} breach {{ slo_alert.lag_records }}"),
            lambda ctx: called.append(ctx),
        ]
    )
    (breach,) = alert_events(10, 500)
    with pytest.raises(TaskDeferred) as deferred:
        watcher.execute_complete(context(), breach)
    # The broken notifier is logged; the others are still called.
    assert Recording.sent == ["ip_count breach 500"]
    assert called[0]["slo_alert"]["kind"] == "breach" and called[0]["run_id"] == "r1"
    assert called[0]["kafkaspark_job"] == "ip_count"
    _, kwargs = deferred.value.trigger.serialize()
    assert kwargs["slo_state"]["breached"] is True and kwargs["watched_s"] == 60.0


def test_the_all_clear_calls_only_the_clear_notifiers() -> None:
    watcher = sensor()
    _, clear = alert_events(500, 10)
    with pytest.raises(TaskDeferred):
        watcher.execute_complete(context(), clear)
    assert Recording.sent == ["ip_count clear after 1"]


def test_each_announcement_renders_the_notifier_for_its_own_alert() -> None:
    watcher = sensor(renotify_after_s=0.5)
    # A breach announced again after 0.5 s, then 1 s: at each of these polls a second apart.
    events = alert_events(500, 700, 900, renotify_after_s=0.5)
    assert len(events) == 3
    for event in events:
        with pytest.raises(TaskDeferred):
            watcher.execute_complete(context(), event)
    assert Recording.sent == ["ip_count breach 500", "ip_count breach 700", "ip_count breach 900"]


def end_event(state: EventState, reason: str, watched_s: float = 10.0) -> dict[str, Any]:
    carried = SloWatch(sensor().settings, None).state.to_dict()
    return WatcherEvent(state, reason, None, carried, watched_s).to_dict()


def test_ends_by_event() -> None:
    stopped = sensor().execute_complete(context(), end_event("stopped", "driver gone: clean"))
    assert stopped["state"] == "stopped" and stopped["reason"] == "driver gone: clean"
    timeout = sensor().execute_complete(context(), end_event("timeout", "time is up", 86_400))
    assert timeout["state"] == "timeout" and timeout["watched_s"] == 86_400
    with pytest.raises(AirflowException, match="ip_count: driver gone: lease expired") as gone:
        sensor().execute_complete(context(), end_event("failed", "driver gone: lease expired"))
    assert not isinstance(gone.value, AirflowFailException)  # retried: a new watch follows
    with pytest.raises(AirflowFailException, match="ip_count: cannot observe"):
        sensor().execute_complete(context(), end_event("invalid", "cannot observe /cp: bad"))
    with pytest.raises(AirflowException, match="watcher event: malformed"):
        sensor().execute_complete(context(), {"state": "alert"})
    with pytest.raises(AirflowException, match="sent no event"):
        sensor().execute_complete(context(), None)


def test_an_alert_at_the_end_of_the_watch_ends_it_instead_of_deferring() -> None:
    (breach,) = alert_events(500)
    breach["watched_s"] = 700.0
    summary = sensor(timeout=600).execute_complete(context(), breach)
    assert summary["state"] == "timeout" and summary["in_breach"] is True
    assert Recording.sent == ["ip_count breach 500"]  # announced all the same


def test_a_whole_watch_in_poke_mode(kafka_unit_conn: None, monkeypatch: pytest.MonkeyPatch) -> None:
    base = trigger_module.now_ms()
    report = StoppedReport(base, "stop", True, 5, 5, owner_id="a" * 32)
    stopped = WatcherInputs(WatchInputs(None, None, report), 5, {"t": 0})
    lags = [running(base, lag) for lag in (10, 500, 800, 5)]
    script: Iterator[WatcherInputs] = iter([*lags, stopped])
    monkeypatch.setattr(trigger_module, "read_watcher_inputs", lambda cp, kafka: next(script))
    watcher = sensor(
        deferrable=False, poll_interval_s=0.01, renotify_after_s=None, restart_grace_s=0
    )
    summary = watcher.execute(context())
    assert summary["state"] == "stopped" and summary["breaches"] == 1
    assert summary["in_breach"] is False and summary["latest_committed"] == 5
    assert Recording.sent == ["ip_count breach 500", "ip_count clear after 1"]
