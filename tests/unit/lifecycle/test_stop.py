"""The one stop loop: the pure decision over what a poll observed, and the loop that the
operator, the trigger and the CLI share, over real control files in a local folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease, now_ms
from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.lifecycle.errors import StopTimeoutError
from airflow_provider_kafkaspark.lifecycle.stop import (
    StopObservation,
    StopOutcome,
    begin_stop,
    decide_stop,
    wait_for_stop,
)

REPORT = StoppedReport(1_000, "stop request by test: x", True, 7, 7, {}, "owner")


def test_a_report_answering_the_request_is_a_stop_with_its_batches() -> None:
    step = decide_stop(
        StopObservation(REPORT, driver_present=True),
        checkpoint="/cp",
        awaited_restart=False,
        bound_passed=False,
    )
    assert step.outcome is StopOutcome.STOPPED and step.report == REPORT


def test_a_report_wins_over_the_bound() -> None:
    step = decide_stop(
        StopObservation(REPORT, driver_present=False),
        checkpoint="/cp",
        awaited_restart=True,
        bound_passed=True,
    )
    assert step.outcome is StopOutcome.STOPPED and step.report == REPORT


def test_a_driver_still_there_is_waited_for_until_the_bound() -> None:
    running = StopObservation(None, driver_present=True)
    waiting = decide_stop(running, checkpoint="/cp", awaited_restart=False, bound_passed=False)
    assert waiting.outcome is StopOutcome.WAIT and waiting.report is None
    passed = decide_stop(running, checkpoint="/cp", awaited_restart=False, bound_passed=True)
    assert passed.outcome is StopOutcome.TIMEOUT and passed.report is None


def test_a_driver_gone_without_a_report_is_gone_naming_its_log() -> None:
    gone = StopObservation(None, driver_present=False, log_file="/logs/d.log")
    step = decide_stop(gone, checkpoint="/cp", awaited_restart=False, bound_passed=False)
    assert step.outcome is StopOutcome.GONE
    assert (
        step.reason == "/cp: the driver exited without a stopped report (driver log: /logs/d.log)"
    )
    # The bound changes nothing about a driver already gone.
    late = decide_stop(gone, checkpoint="/cp", awaited_restart=False, bound_passed=True)
    assert late.outcome is StopOutcome.GONE


def test_a_driver_awaited_for_its_backend_that_never_ran_again_stopped_nothing() -> None:
    never_ran = StopObservation(None, driver_present=False, ended_before_running=True)
    step = decide_stop(never_ran, checkpoint="/cp", awaited_restart=True, bound_passed=False)
    assert step.outcome is StopOutcome.NOT_RUNNING
    # Not awaited for its backend: the lease was live at the request, so it crashed.
    crashed = decide_stop(never_ran, checkpoint="/cp", awaited_restart=False, bound_passed=False)
    assert crashed.outcome is StopOutcome.GONE


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_the_loop_waits_then_gives_up_after_the_bound(tmp_path: Path) -> None:
    checkpoint = str(tmp_path)
    ControlFolder(checkpoint).acquire_lease(Lease.new("job"))  # a live driver that never stops
    started = begin_stop(checkpoint, requested_by="test", reason="t", drain_timeout_s=0)
    assert started is not None and started.wait_s == 30
    clock = FakeClock()
    step = wait_for_stop(checkpoint, started, poll_s=10, clock=clock, sleep=clock.sleep)
    assert step.outcome is StopOutcome.TIMEOUT
    assert clock.sleeps == [10, 10, 10]


def test_the_loop_returns_the_report_once_written(tmp_path: Path) -> None:
    checkpoint = str(tmp_path)
    control = ControlFolder(checkpoint)
    lease = Lease.new("job")
    control.acquire_lease(lease)
    started = begin_stop(checkpoint, requested_by="test", reason="t", drain_timeout_s=60)
    assert started is not None
    clock = FakeClock()

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        report = StoppedReport(now_ms(), "stop request", True, 3, 3, owner_id=lease.owner_id)
        control.finish(lease, report)  # the driver answers during the first wait

    step = wait_for_stop(checkpoint, started, poll_s=1, clock=clock, sleep=sleep)
    assert step.outcome is StopOutcome.STOPPED and step.report is not None
    assert step.report.last_committed_batch == 3 and clock.sleeps == [1]


def test_the_loop_raises_when_the_driver_is_gone_without_a_report(tmp_path: Path) -> None:
    checkpoint = str(tmp_path)
    control = ControlFolder(checkpoint)
    lease = Lease.new("job")
    control.acquire_lease(lease)
    started = begin_stop(checkpoint, requested_by="test", reason="t", drain_timeout_s=60)
    assert started is not None
    control.release_lease(lease)  # a crash: the lease gone, no report
    with pytest.raises(StopTimeoutError, match="without a stopped report"):
        wait_for_stop(checkpoint, started, poll_s=1, sleep=lambda s: None)
    assert now_ms() >= started.request.requested_at_ms
