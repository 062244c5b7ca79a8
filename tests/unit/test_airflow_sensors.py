"""The health watch (pure), the health trigger and sensor, the bootstrap sensor and the
reconcile operator's gates, without a broker."""

from __future__ import annotations

import asyncio
import importlib
import itertools
import json
import socket
from collections.abc import Iterator, Sequence
from typing import Any, cast

import pytest
from airflow.sdk import Context
from airflow.sdk.bases.sensor import PokeReturnValue
from airflow.sdk.exceptions import (
    AirflowException,
    AirflowFailException,
    AirflowSensorTimeout,
    TaskDeferred,
)
from airflow.triggers.base import TriggerEvent

from airflow_provider_kafkaspark.core.control import Lease, StoppedReport
from airflow_provider_kafkaspark.core.health import (
    HealthPolicy,
    HealthReport,
    HealthStatus,
    Observation,
)
from airflow_provider_kafkaspark.core.health_watch import (
    DEFAULT_FAIL_ON,
    HealthWatch,
    WatchDecision,
    parse_fail_on,
)
from airflow_provider_kafkaspark.core.reconcile import Severity
from airflow_provider_kafkaspark.core.xcom_values import parse_batch_id
from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator
from airflow_provider_kafkaspark.sensors.bootstrap import KafkaBootstrapHealthSensor
from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor
from airflow_provider_kafkaspark.triggers import health as trigger_module
from airflow_provider_kafkaspark.triggers.health import (
    CLASSPATH,
    StreamingHealthTrigger,
    WatchInputs,
)

WINDOW_MS = 10_000
STEP_MS = 2_000
T0 = 1_700_000_000_000
SECRET = "s3cret-sasl-password"


def lease(owner: str = "a" * 32, *, started: int = T0 - 5_000, beat: int = T0, ttl: int = 30_000):
    return Lease(
        owner_id=owner,
        job_name="job",
        host="host",
        pid=123,
        started_at_ms=started,
        heartbeat_at_ms=beat,
        ttl_ms=ttl,
    )


def stopped(*, at: int, committed: int | None, owner: str | None = "a" * 32) -> StoppedReport:
    return StoppedReport(
        stopped_at_ms=at,
        reason="stop request by test: done",
        clean=True,
        last_planned_batch=committed,
        last_committed_batch=committed,
        owner_id=owner,
    )


def obs(
    at: int, committed: int | None, offset: int = 100, lag: int = 0, planned: int | None = None
):
    return Observation(
        at_ms=at,
        latest_planned=committed if planned is None else planned,
        latest_committed=committed,
        committed_offsets={"t": {0: offset}},
        end_offsets={"t": {0: offset + lag}},
    )


def watch(**kwargs: Any) -> HealthWatch:
    args: dict[str, Any] = {
        "since_batch": 4,
        "min_new_batches": 2,
        "window_ms": WINDOW_MS,
        "started_ms": T0,
        "startup_grace_ms": 20_000,
    }
    args.update(kwargs)
    return HealthWatch(**args)


def feed(w: HealthWatch, rows: Sequence[tuple[int | None, int, int]], *, alive: bool = True):
    """One poll per row (committed batch, offset, lag), every STEP_MS from T0, with a fresh
    lease; returns the decisions."""
    decisions = []
    for i, (committed, offset, lag) in enumerate(rows):
        now = T0 + i * STEP_MS
        current = lease(beat=now) if alive else None
        decisions.append(w.observe(obs(now, committed, offset, lag), current, None, now))
    return decisions


# -- HealthWatch: each state -------------------------------------------------------------------


def test_waiting_while_the_checkpoint_is_not_written() -> None:
    decision = watch().observe(None, lease(), None, T0)
    assert decision.state == "waiting"
    assert "checkpoint not written yet" in decision.reason
    assert decision.report is None and decision.new_batches == 0


def test_healthy_after_enough_new_batches_and_ok() -> None:
    # The default policy needs 3 observations spanning half the window: 6 s of 10 s here.
    decisions = feed(watch(), [(4, 100, 5), (5, 110, 3), (5, 110, 4), (5, 110, 4), (6, 120, 2)])
    assert [d.state for d in decisions] == ["waiting"] * 4 + ["healthy"]
    assert decisions[3].report is not None and decisions[3].report.status is HealthStatus.OK
    assert "1 of 2 new batches" in decisions[3].reason
    healthy = decisions[4]
    assert healthy.new_batches == 2 and healthy.done
    assert healthy.report is not None and healthy.report.status is HealthStatus.OK
    assert "2 of 2 new batches" in healthy.reason


def test_ok_but_too_few_new_batches_keeps_waiting() -> None:
    # A little lag at every poll: input keeps arriving, so the job is not idle.
    rows = [(4, 100, 3), (5, 110, 3), (6, 120, 3), (7, 130, 3)]
    decisions = feed(watch(min_new_batches=5), rows)
    last = decisions[-1]
    assert last.state == "waiting"
    assert last.report is not None and last.report.status is HealthStatus.OK
    assert last.new_batches == 3 and "3 of 5 new batches" in last.reason


def test_idle_job_at_the_end_of_every_partition_is_healthy_without_new_batches() -> None:
    # A restarted job on a quiet topic: no batch runs, the checkpoint is at the end (lag 0).
    rows = [(4, 100, 0), (4, 100, 0), (4, 100, 0), (4, 100, 0)]
    decisions = feed(watch(min_new_batches=2), rows)
    last = decisions[-1]
    assert last.state == "healthy", last.reason
    assert last.new_batches == 0 and last.reason.startswith("idle: ")
    # Fewer observations than the policy's minimum prove nothing yet.
    assert decisions[1].state == "waiting"


def test_idle_needs_lag_zero_and_a_driver_of_this_run() -> None:
    lagging = feed(watch(min_new_batches=2), [(4, 100, 7)] * 4)
    assert all(d.state == "waiting" for d in lagging)
    # The lease was taken before the watched submit: an old driver, not this run's.
    w = watch(min_new_batches=2, since_ms=T0 - 1_000)
    for i in range(4):
        now = T0 + i * STEP_MS
        decision = w.observe(obs(now, 4, 100, 0), lease(started=T0 - 5_000, beat=now), None, now)
    assert decision.state == "waiting", decision.reason
    # Without a live lease a quiet checkpoint is not a running job.
    dead = feed(watch(min_new_batches=2, lease_required=False), [(4, 100, 0)] * 4, alive=False)
    assert dead[-1].state == "waiting"


def test_supervisor_that_ended_fails_the_watch_at_once_with_the_driver_log() -> None:
    from airflow_provider_kafkaspark.core.control import SubmittedMarker, SupervisorState

    w = watch(min_new_batches=2, since_ms=T0 - 1_000)
    now = T0 + STEP_MS
    ended = SupervisorState(
        attempt=1,
        runner_pid=9,
        started_at_ms=T0 - 900,
        last_exit=-9,
        exited_at_ms=T0,
        gave_up=True,
        ended=True,
    )
    marker = SubmittedMarker(T0 - 1_000, "job", "test", "host", 8, "/logs/job.log")
    decision = w.observe(
        obs(now, 4, 100, 5), lease(beat=now), None, now, supervisor=ended, submitted=marker
    )
    assert decision.state == "failed"
    assert "restart budget is spent" in decision.reason and "last exit -9" in decision.reason
    assert "driver log: /logs/job.log" in decision.reason
    # A supervisor of an earlier run (ended before this watch's submit) says nothing.
    earlier = SupervisorState(1, 9, T0 - 9_000, last_exit=1, exited_at_ms=T0 - 5_000, ended=True)
    w2 = watch(min_new_batches=2, since_ms=T0 - 1_000)
    assert w2.observe(
        obs(now, 4, 100, 5), lease(beat=now), None, now, supervisor=earlier
    ).state == ("waiting")
    # Still supervising (a restart will come): no verdict from it.
    running = SupervisorState(2, 10, T0, last_exit=1, exited_at_ms=T0 - 10)
    w3 = watch(min_new_batches=2, since_ms=T0 - 1_000)
    assert w3.observe(
        obs(now, 4, 100, 5), lease(beat=now), None, now, supervisor=running
    ).state == ("waiting")


def test_since_batch_none_counts_batch_zero() -> None:
    rows: list[tuple[int | None, int, int]] = [(None, 0, 5), (0, 5, 0), (0, 5, 0), (0, 5, 0)]
    decisions = feed(watch(since_batch=None, min_new_batches=1), rows)
    assert decisions[-1].new_batches == 1
    assert decisions[-1].state == "healthy"


def test_stopped_health_fails_after_the_startup_grace_only() -> None:
    rows = [(6, 100, 50)] * 20  # data waits, nothing planned: STOPPED
    decisions = feed(watch(), rows)
    states = [d.state for d in decisions]
    in_grace = [d for i, d in enumerate(decisions) if i * STEP_MS < 20_000]
    assert all(d.state == "waiting" for d in in_grace)
    assert any("STOPPED within the startup grace" in d.reason for d in in_grace)
    assert "failed" in states
    failed = decisions[states.index("failed")]
    assert failed.reason.startswith("health STOPPED")
    assert failed.report is not None and failed.report.status is HealthStatus.STOPPED


def test_rewound_fails_even_within_the_grace() -> None:
    decisions = feed(watch(), [(6, 100, 0), (7, 110, 0), (5, 90, 0)])
    assert decisions[-1].state == "failed"
    assert "REWOUND" in decisions[-1].reason


def test_lagging_fails_only_when_asked() -> None:
    rows = [(5 + i, 100 + i, 10 + 10 * i) for i in range(16)]  # commits, but lag grows
    default = feed(watch(), rows)
    assert {d.state for d in default} == {"waiting"}
    assert default[-1].report is not None
    assert default[-1].report.status is HealthStatus.LAGGING
    strict = feed(watch(fail_on=DEFAULT_FAIL_ON | {HealthStatus.LAGGING}), rows)
    assert strict[-1].state == "failed" and "LAGGING" in strict[-1].reason


def test_stopped_report_of_the_lease_holder_fails_fast() -> None:
    w = watch()
    holder = lease()
    report = stopped(at=T0 + 1, committed=9, owner=holder.owner_id)
    decision = w.observe(obs(T0, 9), holder, report, T0 + 2)
    assert decision.state == "failed"
    assert "driver gone" in decision.reason and "the driver stopped" in decision.reason


def test_stopped_report_after_since_batch_fails_without_lease() -> None:
    decision = watch().observe(obs(T0, 9), None, stopped(at=T0 - 1, committed=9), T0)
    assert decision.state == "failed" and "stopped" in decision.reason


def test_stale_stopped_report_of_an_earlier_run_is_ignored_while_the_driver_starts() -> None:
    w = watch()
    earlier = stopped(at=T0 - 60_000, committed=4, owner="b" * 32)  # the run before this one
    decision = w.observe(obs(T0, 4), None, earlier, T0)
    assert decision.state == "waiting" and "no driver holds the lease yet" in decision.reason
    # With since_ms, the time decides: a report before the submit is another run's.
    timed = watch(since_ms=T0 - 1_000)
    assert timed.observe(obs(T0, 9), None, stopped(at=T0 - 2_000, committed=9), T0).state == (
        "waiting"
    )
    assert timed.observe(obs(T0, 9), None, stopped(at=T0 - 500, committed=9), T0).state == "failed"
    # A live driver of another run holds the lease: the old report says nothing about it.
    live = watch().observe(obs(T0, 9), lease(owner="c" * 32), stopped(at=T0, committed=9), T0)
    assert live.state == "waiting"


def test_lease_released_or_expired_after_it_was_seen_fails_fast() -> None:
    w = watch()
    assert w.observe(obs(T0, 4), lease(), None, T0).state == "waiting"
    released = w.observe(obs(T0 + STEP_MS, 4), None, None, T0 + STEP_MS)
    assert released.state == "failed" and "released the lease" in released.reason

    w = watch()
    w.observe(obs(T0, 4), lease(), None, T0)
    late = T0 + 31_000
    expired = w.observe(obs(late, 4), lease(beat=T0), None, late)
    assert expired.state == "failed"
    assert "lease" in expired.reason and "expired" in expired.reason


def test_no_lease_waits_for_the_grace_then_fails() -> None:
    w = watch()
    assert w.observe(None, None, None, T0).state == "waiting"
    assert w.observe(None, None, None, T0 + 19_000).state == "waiting"
    decision = w.observe(None, None, None, T0 + 21_000)
    assert decision.state == "failed"
    assert "no driver holds the checkpoint's lease" in decision.reason


def test_lease_not_required_lets_health_decide() -> None:
    decisions = feed(
        watch(lease_required=False),
        [(4, 100, 0), (5, 110, 0), (6, 120, 0), (6, 120, 0)],
        alive=False,
    )
    assert decisions[-1].state == "healthy"


def test_a_new_driver_starts_the_history_again_and_the_window_stays_bounded() -> None:
    w = watch(min_new_batches=0)
    feed(w, [(4 + i, 100 + i, 0) for i in range(30)])
    assert len(w.observations) <= WINDOW_MS // STEP_MS + 1
    now = T0 + 30 * STEP_MS
    other = lease(owner="d" * 32, started=now - 1, beat=now)
    w.observe(obs(now, 40, 500, 0), other, None, now)
    assert [o.at_ms for o in w.observations] == [now]


def test_watch_rejects_bad_arguments() -> None:
    with pytest.raises(InvalidInputError, match="min_new_batches"):
        watch(min_new_batches=-1)
    with pytest.raises(InvalidInputError, match="window"):
        watch(window_ms=0)
    with pytest.raises(InvalidInputError, match="cannot fail"):
        parse_fail_on(["OK"])
    with pytest.raises(InvalidInputError, match="unknown health status"):
        parse_fail_on(["sleepy"])
    assert parse_fail_on(["stalled", "Lagging"]) == {HealthStatus.STALLED, HealthStatus.LAGGING}
    assert parse_fail_on(None) == DEFAULT_FAIL_ON


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, None), ("", None), ("None", None), ("null", None), ("12", 12), (" 3 ", 3), (7, 7)],
)
def test_batch_ids_from_templates(raw: object, expected: int | None) -> None:
    assert parse_batch_id(raw) == expected


@pytest.mark.parametrize("raw", ["x", "-1", -1, True, 1.5])
def test_bad_batch_ids_are_refused(raw: object) -> None:
    with pytest.raises(InvalidInputError, match="since_batch"):
        parse_batch_id(raw)


def test_decision_round_trips_as_json_and_times_out_with_its_last_reason() -> None:
    w = watch()
    feed(w, [(4, 100, 5), (5, 110, 3)])
    last = w.last
    assert last is not None and last.state == "waiting"
    again = WatchDecision.from_dict(json.loads(json.dumps(last.to_dict())))
    assert again == last
    timeout = w.timed_out(T0 + 10_000, 3.0)
    assert timeout.state == "timeout" and timeout.reason.startswith("no decision within 3 s")
    assert last.reason in timeout.reason
    with pytest.raises(InvalidInputError, match="malformed"):
        WatchDecision.from_dict({"state": "bored", "reason": "x"})


# -- trigger ----------------------------------------------------------------------------------


def make_trigger(**kwargs: Any) -> StreamingHealthTrigger:
    args: dict[str, Any] = {
        "checkpoint": "/data/cp",
        "kafka_conn_id": "kafka_unit",
        "since_batch": 4,
        "since_ms": T0 - 1,
        "started_ms": T0,
        "min_new_batches": 2,
        "window_s": 6,
        "fail_on": ["stalled", "REWOUND"],
        "poll_interval_s": 0.01,
        "timeout_s": 0.05,
        "policy": {"min_observations": 3, "min_coverage": 0.5, "min_lag_records": 10},
    }
    args.update(kwargs)
    return StreamingHealthTrigger(**args)


def test_trigger_serialize_round_trip() -> None:
    trigger = make_trigger()
    path, kwargs = trigger.serialize()
    assert path == CLASSPATH
    assert json.loads(json.dumps(kwargs)) == kwargs  # plain JSON
    assert kwargs["fail_on"] == ["REWOUND", "STALLED"]
    assert "bootstrap.servers" not in json.dumps(kwargs)
    module, name = path.rsplit(".", 1)
    again = getattr(importlib.import_module(module), name)(**kwargs)
    assert isinstance(again, StreamingHealthTrigger)
    assert again.serialize() == (path, kwargs)
    rebuilt = again.watch()
    assert rebuilt.policy == HealthPolicy(3, 0.5, 10)
    assert rebuilt.since_batch == 4 and rebuilt.since_ms == T0 - 1
    assert rebuilt.fail_on == {HealthStatus.STALLED, HealthStatus.REWOUND}


def test_trigger_refuses_bad_arguments_where_it_is_built() -> None:
    with pytest.raises(InvalidInputError, match="unknown health status"):
        make_trigger(fail_on=["sleepy"])


@pytest.fixture
def kafka_unit_conn(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = {"bootstrap.servers": "127.0.0.1:1", "sasl.password": SECRET}
    monkeypatch.setenv(
        "AIRFLOW_CONN_KAFKA_UNIT", json.dumps({"conn_type": "kafka", "extra": extra})
    )


async def collect(trigger: StreamingHealthTrigger) -> list[TriggerEvent]:
    return [event async for event in trigger.run()]


def test_trigger_run_fires_one_event(
    kafka_unit_conn: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    polls: Iterator[int] = itertools.count()

    def inputs(checkpoint: str, kafka: object) -> WatchInputs:
        i = next(polls)
        now = trigger_module.now_ms()
        return WatchInputs(obs(now, 4 + i), lease(started=now - 60_000, beat=now), None)

    monkeypatch.setattr(trigger_module, "read_watch_inputs", inputs)
    # Healthy once two observations span half of the 0.3 s window.
    trigger = make_trigger(window_s=0.3, timeout_s=30, policy={"min_observations": 2})
    events = asyncio.run(collect(trigger))
    assert len(events) == 1
    payload = events[0].payload
    assert payload["state"] == "healthy" and payload["new_batches"] >= 2
    assert SECRET not in json.dumps(payload)


def test_trigger_times_out(kafka_unit_conn: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def inputs(checkpoint: str, kafka: object) -> WatchInputs:
        now = trigger_module.now_ms()
        return WatchInputs(None, lease(started=now, beat=now), None)

    monkeypatch.setattr(trigger_module, "read_watch_inputs", inputs)
    events = asyncio.run(collect(make_trigger(since_ms=None, started_ms=None)))
    assert [e.payload["state"] for e in events] == ["timeout"]
    assert "checkpoint not written yet" in events[0].payload["reason"]


def test_trigger_turns_bad_input_into_a_failed_event(
    kafka_unit_conn: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(checkpoint: str, kafka: object) -> WatchInputs:
        raise InvalidInputError(f"{checkpoint}/offsets/3: truncated")

    monkeypatch.setattr(trigger_module, "read_watch_inputs", broken)
    events = asyncio.run(collect(make_trigger(timeout_s=30)))
    assert [e.payload["state"] for e in events] == ["failed"]
    assert "offsets/3: truncated" in events[0].payload["reason"]


# -- health sensor ----------------------------------------------------------------------------


def context() -> Context:
    return cast(Context, {})


def test_sensor_template_fields_and_modes() -> None:
    assert {"checkpoint", "since_batch", "kafka_conn_id"} <= set(
        StreamingHealthSensor.template_fields
    )
    with pytest.raises(ValueError, match="mode"):
        StreamingHealthSensor(task_id="s", checkpoint="/cp", mode="reschedule")
    with pytest.raises(InvalidInputError, match="unknown health status"):
        StreamingHealthSensor(task_id="s", checkpoint="/cp", fail_on=["sleepy"])
    sensor = StreamingHealthSensor(task_id="s", checkpoint="/cp", poll_interval_s=3)
    assert sensor.poke_interval == 3


def test_sensor_coerces_a_rendered_since_batch() -> None:
    sensor = StreamingHealthSensor(
        task_id="s",
        checkpoint="{{ params.base }}/cp",
        since_batch="{{ submitted['since_batch'] }}",
    )
    sensor.render_template_fields(
        cast(Context, {"params": {"base": "/data"}, "submitted": {"since_batch": 12}})
    )
    assert sensor.since_batch == "12" and sensor.checkpoint == "/data/cp"
    assert sensor.resolved_since() == (12, None)
    sensor.since_batch = "None"
    assert sensor.resolved_since() == (None, None)
    sensor.since_batch = "twelve"
    with pytest.raises(AirflowFailException, match="since_batch"):
        sensor.resolved_since()


def test_deferrable_sensor_defers_to_the_health_trigger() -> None:
    sensor = StreamingHealthSensor(
        task_id="s",
        checkpoint="/data/cp",
        kafka_conn_id="kafka_x",
        since_batch="7",
        min_new_batches=4,
        window_s=30,
        fail_on=["stalled"],
        deferrable=True,
        poll_interval_s=5,
        timeout=600,
    )
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(context())
    assert deferred.value.method_name == "execute_complete"
    trigger = deferred.value.trigger
    assert isinstance(trigger, StreamingHealthTrigger)
    path, kwargs = trigger.serialize()
    assert path == CLASSPATH
    assert kwargs["since_batch"] == 7 and kwargs["min_new_batches"] == 4
    assert kwargs["kafka_conn_id"] == "kafka_x" and kwargs["checkpoint"] == "/data/cp"
    assert kwargs["fail_on"] == ["STALLED"] and kwargs["timeout_s"] == 600
    assert kwargs["started_ms"] is not None
    assert deferred.value.timeout is not None and deferred.value.timeout.total_seconds() > 600


def report_dict(status: HealthStatus = HealthStatus.OK) -> dict[str, Any]:
    return HealthReport(status, "3 batches committed", {"latest_committed": 9}).to_dict()


def test_execute_complete_success_and_failure_shapes() -> None:
    sensor = StreamingHealthSensor(task_id="s", checkpoint="/cp")
    healthy = {"state": "healthy", "reason": "fine", "report": report_dict(), "new_batches": 3}
    result = sensor.execute_complete(context(), healthy)
    assert result == {
        "state": "healthy",
        "reason": "fine",
        "new_batches": 3,
        "status": "OK",
        "latest_committed": 9,
    }
    assert json.loads(json.dumps(result)) == result

    failed = {"state": "failed", "reason": "driver gone: stopped", "report": None, "new_batches": 0}
    with pytest.raises(AirflowFailException, match="driver gone: stopped"):
        sensor.execute_complete(context(), failed)
    timeout = {**failed, "state": "timeout", "reason": "no decision within 60 s"}
    with pytest.raises(AirflowSensorTimeout, match="no decision within 60 s"):
        sensor.execute_complete(context(), timeout)
    with pytest.raises(AirflowException, match="no event"):
        sensor.execute_complete(context(), None)


def test_poke_mode_keeps_its_observations(
    kafka_unit_conn: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    polls: Iterator[int] = itertools.count()
    base = trigger_module.now_ms()

    def inputs(checkpoint: str, kafka: object) -> WatchInputs:
        i = next(polls)
        at = base + i * 1_000  # observations a second apart, whatever the real pace
        # A record of lag at every poll: busy, not idle, so only new batches make it healthy.
        return WatchInputs(obs(at, 4 + i, lag=1), lease(started=base - 60_000, beat=at), None)

    monkeypatch.setattr(trigger_module, "read_watch_inputs", inputs)
    sensor = StreamingHealthSensor(
        task_id="s", checkpoint="/cp", kafka_conn_id="kafka_unit", since_batch="4", window_s=4
    )
    results = [sensor.poke(context()) for _ in range(4)]
    assert [bool(r) for r in results] == [False, False, False, True]
    done = results[-1]
    assert isinstance(done, PokeReturnValue) and done.xcom_value is not None
    assert done.xcom_value["new_batches"] == 3 and done.xcom_value["status"] == "OK"
    assert SECRET not in json.dumps(done.xcom_value)
    sensor.close()


# -- bootstrap sensor and reconcile operator --------------------------------------------------


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_bootstrap_sensor_with_only_dead_servers_is_never_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    servers = f"127.0.0.1:{closed_port()},127.0.0.1:{closed_port()}"
    extra = {"bootstrap.servers": servers, "sasl.password": SECRET}
    monkeypatch.setenv(
        "AIRFLOW_CONN_KAFKA_DEAD", json.dumps({"conn_type": "kafka", "extra": extra})
    )
    for require_all in (True, False):
        sensor = KafkaBootstrapHealthSensor(
            task_id="b", kafka_conn_id="kafka_dead", timeout_s=2, require_all=require_all
        )
        result = sensor.poke(context())
        assert not result.is_done and result.xcom_value is None
    assert KafkaBootstrapHealthSensor.template_fields == ("kafka_conn_id",)


def test_reconcile_operator_arguments() -> None:
    op = KafkaPartitionReconcileOperator(
        task_id="r", checkpoint="/cp", subscribe="a, b,,c", fail_on="warning", soft_fail_on=None
    )
    assert op.fail_on is Severity.WARNING and op.soft_fail_on is None
    assert op.topics() == ["a", "b", "c"]
    assert {"checkpoint", "subscribe"} <= set(op.template_fields)
    with pytest.raises(InvalidInputError, match="unknown severity"):
        KafkaPartitionReconcileOperator(task_id="r2", checkpoint="/cp", fail_on="fatal")


def test_a_report_of_the_latest_submit_counts_though_no_lease_was_ever_seen() -> None:
    """A bad job can exit before the sensor's first look: the stopped report written after
    the latest submit (its marker) fails the watch, though it names no batch after since."""
    from airflow_provider_kafkaspark.core.control import SubmittedMarker

    marker = SubmittedMarker(T0 - 3_000, "job", "test", "host", 8, "/logs/job.log")
    report = stopped(at=T0 - 1_000, committed=4, owner="b" * 32)
    now = T0 + STEP_MS
    decision = watch(since_batch=4).observe(None, None, report, now, submitted=marker)
    assert decision.state == "failed" and "/logs/job.log" in decision.reason
    # The same report before that submit belongs to an earlier run: wait for the new driver.
    later = SubmittedMarker(T0, "job", "test", "host", 8, "/logs/job.log")
    assert watch(since_batch=4).observe(None, None, report, now, submitted=later).state == (
        "waiting"
    )
