"""The health watch (pure): its states and decisions, and the batch ids it starts from."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.core.health.rules import HealthStatus
from airflow_provider_kafkaspark.core.health.watch import (
    DEFAULT_FAIL_ON,
    HealthWatch,
    WatchDecision,
    parse_fail_on,
)
from airflow_provider_kafkaspark.core.spec.xcom_values import parse_batch_id
from airflow_provider_kafkaspark.errors import InvalidInputError
from tests.unit.airflow_helpers import T0, lease, obs

WINDOW_MS = 10_000
STEP_MS = 2_000


def stopped(*, at: int, committed: int | None, owner: str | None = "a" * 32) -> StoppedReport:
    return StoppedReport(
        stopped_at_ms=at,
        reason="stop request by test: done",
        clean=True,
        last_planned_batch=committed,
        last_committed_batch=committed,
        owner_id=owner,
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
    from airflow_provider_kafkaspark.core.control.reports import SupervisorState
    from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker

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


def test_a_report_of_the_latest_submit_counts_though_no_lease_was_ever_seen() -> None:
    """A bad job can exit before the sensor's first look: the stopped report written after
    the latest submit (its marker) fails the watch, though it names no batch after since."""
    from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker

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
