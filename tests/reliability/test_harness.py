"""The harness's own rules, without Kafka or Spark: waits end on their condition and say what
they saw when they give up, and driver_kills checks the events that were acked."""

from __future__ import annotations

import itertools

import pytest

from airflow_provider_kafkaspark.examples.access_events import generate_events
from reliability import stack
from reliability.scenarios.driver_kills import EventProducer


def test_wait_for_returns_the_observation_once_done() -> None:
    seen = itertools.count()
    assert stack.wait_for("three polls", lambda: next(seen), 10, 0.01, done=lambda n: n >= 3) == 3


def test_wait_for_names_what_it_waited_for_and_what_it_saw_last() -> None:
    with pytest.raises(TimeoutError) as raised:
        stack.wait_for("a batch after 7", lambda: {"batch": 5}, 0.05, 0.01, done=lambda s: False)
    message = str(raised.value)
    assert "waiting for a batch after 7" in message
    assert "bound 0.05s" in message
    assert "last saw: {'batch': 5}" in message


def test_only_the_scenario_ends_a_producer_in_time() -> None:
    producer = stack.SteadyProducer("127.0.0.1:1", "t", count=1, rate=1.0)
    assert not producer.ended_early
    producer.ended_by = "stop"
    assert not producer.ended_early
    for early in ("time cap", "count cap", "error: KafkaException: down"):
        producer.ended_by = early
        assert producer.ended_early


def test_event_producer_checks_the_acked_events_only() -> None:
    producer = EventProducer("127.0.0.1:1", "t", 100.0, seed=3, count=1_000, max_seconds=1.0)
    records = [producer.record(i) for i in range(50)]
    for i in range(0, 50, 2):
        producer.on_acked(i)
    events = list(generate_events(50, seed=3))
    assert [r.value for r in records] == [e.to_json() for e in events]
    assert producer.last_event_ms == max(e.event_time_ms for e in events)
    assert list(producer.acked_events()) == events[0:50:2]
