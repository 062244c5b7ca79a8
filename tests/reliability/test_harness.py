"""The harness's own rules, without Kafka or Spark: waits end on their condition and say what
they saw when they give up, and driver_kills checks the events that were acked."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.examples.access_events import generate_events
from reliability import report, stack
from reliability.model import Profile, ScenarioResult
from reliability.run import run_one, write_results
from reliability.scenarios import run_name, storages
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


def test_runs_on_s3_are_named_apart_and_only_where_a_scenario_supports_them(
    tmp_path: Path,
) -> None:
    assert storages("repeated_restores") == ("local", "s3")
    assert storages("broker_loss") == ("local",)
    assert run_name("repeated_restores", "local") == "repeated_restores"
    assert run_name("repeated_restores", "s3") == "repeated_restores[s3]"
    with pytest.raises(ValueError, match="broker_loss runs on local, not s3"):
        run_one("broker_loss", Profile.named("short"), tmp_path, "s3")


def test_the_table_puts_a_scenarios_s3_run_after_its_local_one(tmp_path: Path) -> None:
    profile = Profile.named("short")
    results = [
        ScenarioResult("repeated_restores[s3]", "r", 1, 1, passed=True),
        ScenarioResult("partitions_added", "p", 1, 1, passed=True),
        ScenarioResult("repeated_restores", "r", 1, 1, passed=True),
        ScenarioResult("driver_kills", "d", 1, 1, passed=True),
    ]
    write_results(profile, results, tmp_path)
    rows = [
        line.split(":")[0] for line in report.render(tmp_path).splitlines() if "| pass |" in line
    ]
    assert rows == [
        "| driver_kills",
        "| repeated_restores",
        "| repeated_restores[s3]",
        "| partitions_added",
    ]


def test_task_threads_keeps_the_top_of_each_spark_task_thread_only() -> None:
    dump = "\n\n".join(
        [
            '"main" #1 prio=5\n   java.lang.Thread.State: WAITING\n\tat a.b.C.wait(C.java:1)',
            '"Executor task launch worker for task 0.0" #90 daemon\n'
            "   java.lang.Thread.State: RUNNABLE\n"
            + "".join(f"\tat k.Fetch.frame{i}(Fetch.java:{i})\n" for i in range(30)),
        ]
    )
    lines = stack.task_threads(dump, frames=3)
    assert lines[0].startswith('"Executor task launch worker for task 0.0"')
    assert lines[-1] == "\tat k.Fetch.frame2(Fetch.java:2)"
    assert len(lines) == 5
    assert not any("main" in line for line in lines)
