"""StreamingStopTrigger: serialization and the events it reads from the control folder."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease, now_ms
from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.triggers.stop import StreamingStopTrigger
from tests.unit.airflow_helpers import first_event_closed_elsewhere


def first_event(trigger: StreamingStopTrigger) -> dict[str, Any]:
    async def collect() -> dict[str, Any]:
        async for event in trigger.run():
            return dict(event.payload)
        raise AssertionError("no event")

    return asyncio.run(collect())


def test_serialize_round_trip() -> None:
    ref = {
        "backend": "yarn",
        "job_name": "job",
        "checkpoint": "/cp",
        "application_id": "application_1_0002",
        "resource_manager": "http://rm:8088",
    }
    trigger = StreamingStopTrigger("/cp", 123, 60.0, job_ref=ref, poll_interval_s=0.5)
    path, kwargs = trigger.serialize()
    assert path == "airflow_provider_kafkaspark.triggers.stop.StreamingStopTrigger"
    assert StreamingStopTrigger(**kwargs).serialize() == (path, kwargs)


def test_trigger_events(tmp_path: Path) -> None:
    checkpoint = str(tmp_path)
    control = ControlFolder(checkpoint)
    lease = Lease.new("job")
    control.acquire_lease(lease)
    asked = now_ms()
    timeout = first_event(StreamingStopTrigger(checkpoint, asked, 0.1, poll_interval_s=0.05))
    assert timeout["state"] == "timeout"

    control.write_stopped(StoppedReport(asked + 1, "stop request", True, 7, 7, {}, "x"))
    stopped = first_event(StreamingStopTrigger(checkpoint, asked, 5, poll_interval_s=0.05))
    assert stopped == {
        "state": "stopped",
        "reason": "stop request",
        "clean": True,
        "last_planned_batch": 7,
        "last_committed_batch": 7,
    }
    control.release_lease(lease)
    control.clear_stopped()
    gone = first_event(StreamingStopTrigger(checkpoint, asked, 5, poll_interval_s=0.05))
    assert gone["state"] == "gone" and "without a stopped report" in gone["reason"]
    # Awaited only because its backend listed it, and it took no lease since: nothing ran.
    trigger = StreamingStopTrigger(checkpoint, asked, 5, poll_interval_s=0.05, awaited_restart=True)
    assert first_event(trigger)["state"] == "not_running"
    assert trigger.serialize()[1]["awaited_restart"] is True


def test_a_reference_the_trigger_cannot_read_ends_it(tmp_path: Path) -> None:
    bad = {"backend": "yarn", "job_name": "job", "checkpoint": str(tmp_path)}
    event = first_event(StreamingStopTrigger(str(tmp_path), now_ms(), 5, job_ref=bad))
    assert event["state"] == "gone" and "lacks application_id" in event["reason"]


def test_the_trigger_closes_from_another_task_than_the_one_that_read_its_event(
    tmp_path: Path,
) -> None:
    """The triggerer reads a trigger's event in one task; an unfinished async generator is
    closed later by asyncio in a task (a context) of its own. Leaving the storage scope there
    failed ("created in a different Context") while the event's yield was inside it."""
    checkpoint = str(tmp_path)
    ControlFolder(checkpoint).acquire_lease(Lease.new("job"))
    trigger = StreamingStopTrigger(checkpoint, now_ms(), 0.1, poll_interval_s=0.05)

    assert first_event_closed_elsewhere(trigger)["state"] == "timeout"
