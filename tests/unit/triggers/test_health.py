"""StreamingHealthTrigger: serialization, argument checks and the events its run fires."""

from __future__ import annotations

import asyncio
import importlib
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from airflow.triggers.base import TriggerEvent

from airflow_provider_kafkaspark.core.health.inputs import WatchInputs
from airflow_provider_kafkaspark.core.health.rules import HealthPolicy, HealthStatus
from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.triggers import health as trigger_module
from airflow_provider_kafkaspark.triggers.health import CLASSPATH, StreamingHealthTrigger
from tests.unit.airflow_helpers import SECRET, T0, first_event_closed_elsewhere, lease, obs


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


def test_trigger_closes_from_another_task_than_the_one_that_read_its_event(
    kafka_unit_conn: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the triggerer leaves it: the event read in one task, the generator closed by
    asyncio in another (another context), which must not fail on the storage scope."""

    def inputs(checkpoint: str, kafka: object) -> WatchInputs:
        now = trigger_module.now_ms()
        return WatchInputs(None, lease(started=now, beat=now), None)

    monkeypatch.setattr(trigger_module, "read_watch_inputs", inputs)
    trigger = make_trigger(since_ms=None, started_ms=None)

    assert first_event_closed_elsewhere(trigger)["state"] == "timeout"
