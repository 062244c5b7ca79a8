"""One settings object for the health sensor and its trigger; Airflow's deferrable default;
poke_interval drives the trigger's polling."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import cast

import pytest
from airflow.sdk import Context
from airflow.sdk.exceptions import TaskDeferred

from airflow_provider_kafkaspark.core.health.rules import HealthPolicy
from airflow_provider_kafkaspark.core.health.settings import HealthSettings
from airflow_provider_kafkaspark.errors import InvalidArgumentError
from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator
from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor
from airflow_provider_kafkaspark.triggers.health import StreamingHealthTrigger


def test_settings_round_trip_as_plain_json() -> None:
    settings = HealthSettings.checked(
        "t", min_new_batches=2, fail_on=["stalled"], policy={"min_observations": 2}
    )
    again = HealthSettings.from_dict(settings.to_dict())
    assert again == settings
    assert again.policy == HealthPolicy(min_observations=2)
    assert settings.to_dict()["fail_on"] == ["STALLED"]


def test_unknown_and_bad_settings_are_named() -> None:
    with pytest.raises(InvalidArgumentError, match=r"unknown settings \['window'\]"):
        HealthSettings.from_dict({"window": 3}, "trigger")
    with pytest.raises(InvalidArgumentError, match="h: window_s"):
        HealthSettings.checked("h", window_s=0)
    with pytest.raises(InvalidArgumentError, match="h: policy"):
        HealthSettings.checked("h", policy={"no_such_rule": 1})


def test_the_sensor_and_its_trigger_share_the_settings() -> None:
    sensor = StreamingHealthSensor(
        task_id="s", checkpoint="/cp", window_s=30, min_new_batches=4, deferrable=True
    )
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(cast(Context, {}))
    trigger = deferred.value.trigger
    assert isinstance(trigger, StreamingHealthTrigger)
    assert trigger.settings == sensor.settings


def test_poke_interval_drives_the_trigger_too() -> None:
    sensor = StreamingHealthSensor(task_id="s", checkpoint="/cp", poke_interval=2, deferrable=True)
    assert sensor.settings.poll_interval_s == 2.0
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(cast(Context, {}))
    trigger = deferred.value.trigger
    assert isinstance(trigger, StreamingHealthTrigger)
    assert trigger.settings.poll_interval_s == 2.0


def test_deferrable_is_off_by_default_here() -> None:
    assert not StreamingHealthSensor(task_id="s", checkpoint="/cp").deferrable
    stop = StopStreamingJobOperator(
        task_id="t", checkpoint="/cp", job_name="j", savepoint_root="/s"
    )
    assert not stop.deferrable


def test_deferrable_follows_airflows_default_deferrable() -> None:
    code = (
        "from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor\n"
        "from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator\n"
        "s = StreamingHealthSensor(task_id='s', checkpoint='/cp')\n"
        "t = StopStreamingJobOperator(task_id='t', checkpoint='/cp', job_name='j', "
        "savepoint_root='/s')\n"
        "print(s.deferrable, t.deferrable)\n"
    )
    env = {**os.environ, "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
