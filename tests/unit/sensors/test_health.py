"""StreamingHealthSensor: arguments, deferral to its trigger, event shapes and poke mode."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
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

from airflow_provider_kafkaspark.core.health.inputs import WatchInputs
from airflow_provider_kafkaspark.core.health.rules import HealthReport, HealthStatus
from airflow_provider_kafkaspark.errors import InvalidArgumentError, InvalidInputError
from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor
from airflow_provider_kafkaspark.triggers import health as trigger_module
from airflow_provider_kafkaspark.triggers.health import CLASSPATH, StreamingHealthTrigger
from tests.unit.airflow_helpers import SECRET, context, lease, obs


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


def test_poll_interval_and_a_different_poke_interval_are_refused() -> None:
    assert (
        StreamingHealthSensor(task_id="s", checkpoint="/cp", poll_interval_s=3).poke_interval == 3
    )
    with pytest.raises(InvalidArgumentError, match="poll_interval_s and poke_interval"):
        StreamingHealthSensor(task_id="s", checkpoint="/cp", poll_interval_s=3, poke_interval=5)
