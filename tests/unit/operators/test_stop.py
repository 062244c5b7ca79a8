"""StopStreamingJobOperator: its fields, the deferrable stop and the savepoint Asset it emits."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from airflow.sdk import Asset, AssetAlias, Context
from airflow.sdk.execution_time.context import OutletEventAccessors

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator, savepoint_asset
from airflow_provider_kafkaspark.triggers.stop import StreamingStopTrigger


def test_stop_announces_savepoints_on_the_job_asset() -> None:
    op = StopStreamingJobOperator(
        task_id="stop", checkpoint="/cp", job_name="clicks", savepoint_root="/sp"
    )
    assert op.outlets == [savepoint_asset("clicks")]
    assert savepoint_asset("clicks").uri == "kafkaspark://savepoints/clicks"
    assert {"checkpoint", "job_name", "savepoint_root", "handle"} <= set(op.template_fields)
    assert op.allow_force_kill is False  # killing is opt-in


def test_deferrable_stop_writes_the_request_then_defers(tmp_path: Path) -> None:
    from airflow.sdk.exceptions import TaskDeferred

    checkpoint = str(tmp_path)
    ControlFolder(checkpoint).acquire_lease(Lease.new("job"))  # a live driver
    op = StopStreamingJobOperator(
        task_id="stop",
        checkpoint=checkpoint,
        job_name="job",
        savepoint_root=str(tmp_path / "sp"),
        deferrable=True,
        drain_timeout_s=10,
        wait_in_task_s=0,
    )
    with pytest.raises(TaskDeferred) as deferred:
        op.execute({})
    trigger = deferred.value.trigger
    assert isinstance(trigger, StreamingStopTrigger)
    assert deferred.value.method_name == "execute_complete"
    request = ControlFolder(checkpoint).read_stop_request()
    assert request is not None and request.requested_at_ms == trigger.requested_at_ms
    assert trigger.timeout_s == 10 + 30


def test_a_driver_that_answers_within_the_in_task_wait_is_stopped_without_deferring(
    tmp_path: Path,
) -> None:
    """The in-task wait: no trigger, so none that fires before the deferral is reported."""
    import threading
    import time

    from airflow_provider_kafkaspark.core.control.reports import StoppedReport

    checkpoint = str(tmp_path)
    control = ControlFolder(checkpoint)
    lease = Lease.new("job", ttl_ms=60_000)
    control.acquire_lease(lease)

    def driver() -> None:  # answers the request at its next batch boundary
        for _ in range(100):
            request = control.read_stop_request()
            if request is not None:
                report = StoppedReport(
                    stopped_at_ms=request.requested_at_ms + 500,
                    reason="stop request",
                    clean=True,
                    last_planned_batch=3,
                    last_committed_batch=3,
                    owner_id=lease.owner_id,
                    requested_by=request.requested_by,
                    requested_at_ms=request.requested_at_ms,
                )
                time.sleep(0.5)
                control.finish(lease, report)
                return
            time.sleep(0.05)

    answering = threading.Thread(target=driver)
    answering.start()
    op = StopStreamingJobOperator(
        task_id="stop",
        checkpoint=checkpoint,
        job_name="job",
        savepoint_root=str(tmp_path / "sp"),
        take_savepoint=False,
        deferrable=True,
        poll_interval_s=0.1,
        wait_in_task_s=5,
    )
    result = op.execute({})  # no TaskDeferred
    answering.join(10)
    assert result["stopped"]["clean"] is True
    assert result["stopped"]["last_committed_batch"] == 3


def test_a_driver_still_draining_after_the_in_task_wait_is_left_to_the_trigger(
    tmp_path: Path,
) -> None:
    from airflow.sdk.exceptions import TaskDeferred

    checkpoint = str(tmp_path)
    ControlFolder(checkpoint).acquire_lease(Lease.new("job", ttl_ms=60_000))
    op = StopStreamingJobOperator(
        task_id="stop",
        checkpoint=checkpoint,
        job_name="job",
        savepoint_root=str(tmp_path / "sp"),
        deferrable=True,
        drain_timeout_s=10,
        poll_interval_s=0.1,
        wait_in_task_s=0.5,
    )
    with pytest.raises(TaskDeferred) as deferred:
        op.execute({})
    trigger = deferred.value.trigger
    assert isinstance(trigger, StreamingStopTrigger)
    assert 38 <= trigger.timeout_s < 10 + 30  # what the task waited is not waited again


def test_a_literal_job_name_declares_its_asset() -> None:
    op = StopStreamingJobOperator(
        task_id="s", checkpoint="/cp", job_name="clicks", savepoint_root="/sp"
    )
    assert op.outlets == [savepoint_asset("clicks")]


def test_a_templated_job_name_declares_the_alias_and_emits_the_rendered_asset() -> None:
    op = StopStreamingJobOperator(
        task_id="s", checkpoint="/cp", job_name="{{ params.job }}", savepoint_root="/sp"
    )
    assert op.outlets == [AssetAlias("kafkaspark-savepoints")]
    op.job_name = "clicks"  # what rendering does
    events = OutletEventAccessors()
    op._announce(cast(Context, {"outlet_events": events}), {"savepoint_id": "sp-1"})
    (added,) = events[AssetAlias("kafkaspark-savepoints")].asset_alias_events
    assert added.dest_asset_key.uri == "kafkaspark://savepoints/clicks"
    assert added.extra == {"savepoint_id": "sp-1"}


def test_a_literal_job_name_emits_on_its_declared_asset() -> None:
    op = StopStreamingJobOperator(
        task_id="s", checkpoint="/cp", job_name="clicks", savepoint_root="/sp"
    )
    events = OutletEventAccessors()
    op._announce(cast(Context, {"outlet_events": events}), {"savepoint_id": "sp-1"})
    assert events[savepoint_asset("clicks")].extra == {"savepoint_id": "sp-1"}
    assert isinstance(op.outlets[0], Asset)


def test_a_stop_counts_once_and_its_retry_finding_the_job_stopped_counts_no_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    from airflow.sdk.observability import stats

    from airflow_provider_kafkaspark.core.control.reports import StoppedReport

    sent: list[str] = []

    class Recorder:
        def incr(self, name: str, value: int, **tags: object) -> None:
            sent.append(name)

    monkeypatch.setattr(stats, "Stats", Recorder())
    checkpoint = str(tmp_path)
    control = ControlFolder(checkpoint)
    lease = Lease.new("job", ttl_ms=60_000)
    control.acquire_lease(lease)

    def driver() -> None:
        for _ in range(200):
            request = control.read_stop_request()
            if request is not None:
                control.finish(
                    lease,
                    StoppedReport(
                        stopped_at_ms=request.requested_at_ms + 100,
                        reason="stop request",
                        clean=True,
                        last_planned_batch=1,
                        last_committed_batch=1,
                        owner_id=lease.owner_id,
                        requested_by=request.requested_by,
                        requested_at_ms=request.requested_at_ms,
                    ),
                )
                return
            time.sleep(0.05)

    answering = threading.Thread(target=driver)
    answering.start()
    op = StopStreamingJobOperator(
        task_id="stop",
        checkpoint=checkpoint,
        job_name="job",
        savepoint_root=str(tmp_path / "sp"),
        take_savepoint=False,
        poll_interval_s=0.1,
    )
    ctx = cast(Context, {"run_id": "r1"})
    assert op.execute(ctx)["stopped"]["clean"] is True
    answering.join(10)
    assert sent == ["kafkaspark.job.stops"]
    again = op.execute(ctx)  # a retry of the same run: its earlier try's report
    assert again["stopped"]["clean"] is True
    assert sent == ["kafkaspark.job.stops"]
