"""A row of the jobs view from observed facts (pure): state, lag, ages, chart points."""

from __future__ import annotations

from dataclasses import replace

from airflow_provider_kafkaspark.core.control.reports import (
    BatchProgress,
    ProgressFile,
    StoppedReport,
)
from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker
from airflow_provider_kafkaspark.core.overview.facts import JobFacts, KnownJob
from airflow_provider_kafkaspark.core.overview.row import (
    FAILED,
    LOST,
    NOT_STARTED,
    RUNNING,
    STARTING,
    STOPPED,
    UNREADABLE,
    job_row,
)
from tests.unit.airflow_helpers import T0, lease

JOB = KnownJob("clicks", "s3://b/clicks/cp", "dag", "submit", "run1", "2026-11-27T00:00:00")


def facts(**values: object) -> JobFacts:
    return replace(JobFacts(job=JOB, observed_at_ms=T0), **values)  # type: ignore[arg-type]


def stopped(owner: str | None = "a" * 32, *, clean: bool = True, exit_code: int | None = 0):
    return StoppedReport(
        stopped_at_ms=T0 - 1_000,
        reason="stop request by test",
        clean=clean,
        last_planned_batch=7,
        last_committed_batch=7,
        owner_id=owner,
        exit_code=exit_code,
    )


def test_a_fresh_lease_is_running_and_names_its_holder() -> None:
    row = job_row(facts(lease=lease()))
    assert row.state == RUNNING
    assert row.lease_holder is not None and "host pid 123" in row.lease_holder


def test_a_lease_answered_by_its_holders_stopped_report_is_stopped() -> None:
    assert job_row(facts(lease=lease(), stopped=stopped())).state == STOPPED


def test_a_stopped_report_of_an_earlier_driver_does_not_hide_the_running_one() -> None:
    assert job_row(facts(lease=lease(), stopped=stopped(owner="b" * 32))).state == RUNNING


def test_an_unclean_or_bad_exit_is_failed() -> None:
    assert job_row(facts(stopped=stopped(clean=False))).state == FAILED
    assert job_row(facts(stopped=stopped(exit_code=4))).state == FAILED


def test_an_expired_lease_without_a_report_is_lost() -> None:
    assert job_row(facts(lease=lease(beat=T0 - 60_000))).state == LOST


def test_a_submit_without_a_lease_yet_is_starting() -> None:
    marker = SubmittedMarker(T0 - 5_000, "clicks", "airflow:dag.submit", "worker1")
    assert job_row(facts(submitted=marker)).state == STARTING
    assert job_row(facts()).state == NOT_STARTED


def test_an_unreadable_control_folder_says_so_and_why() -> None:
    row = job_row(facts(problems=(("control folder", "s3://b/clicks/cp: unreachable"),)))
    assert row.state == UNREADABLE
    assert row.state_reason == "s3://b/clicks/cp: unreachable"
    assert row.problems == ("control folder: s3://b/clicks/cp: unreachable",)


def test_lag_per_topic_over_the_committed_partitions() -> None:
    committed = {"a": {0: 10, 1: 5}, "b": {0: 0}}
    end = {"a": {0: 15, 1: 5, 2: 99}, "b": {0: 3}}
    row = job_row(facts(latest_committed=3, committed_offsets=committed, end_offsets=end))
    assert row.lag == {"a": 5, "b": 3} and row.lag_total == 8


def test_lag_is_unknown_never_zero_when_kafka_did_not_answer() -> None:
    row = job_row(
        facts(
            latest_committed=3,
            committed_offsets={"a": {0: 1}},
            problems=(("kafka", "no broker answered in 3 s"),),
        )
    )
    assert row.lag is None and row.lag_total is None
    assert row.lag_unknown_reason == "no broker answered in 3 s"
    assert job_row(facts()).lag is None  # nothing committed yet: unknown too


def test_the_age_is_the_storages_and_the_chart_keeps_the_last_batches_in_order() -> None:
    batches = tuple(
        BatchProgress(i, "t", 10 * i, 2.0 * i, 3.0, {"triggerExecution": 100 + i}, {}, {})
        for i in range(30, 0, -1)
    )
    progress = ProgressFile("q", "r", T0, batches)
    row = job_row(facts(commit_age_ms=4_500, progress=progress))
    assert row.last_batch_age_s == 4.5
    assert [b.batch_id for b in row.batches] == list(range(11, 31))
    assert row.last_batch_duration_ms == 130 and row.input_rows_per_second == 60.0


def test_the_row_is_plain_json() -> None:
    import json

    data = job_row(facts(lease=lease(), stopped=stopped(owner="b" * 32))).to_dict()
    assert json.loads(json.dumps(data))["state"] == RUNNING
    assert data["stop"]["last_committed_batch"] == 7


def test_lag_commits_failing_are_a_problem_of_the_running_job() -> None:
    failing = ProgressFile(
        "q",
        "r",
        T0,
        lag_commits_failed=94,
        lag_commits_failing_since_ms=1_795_000_000_000,
        lag_commit_failures_in_a_row=3,
        lag_commit_error="NOT_COORDINATOR",
    )
    row = job_row(facts(lease=lease(), progress=failing))
    (problem,) = row.problems
    assert problem.startswith("lag commits failing since 2026-11-18T")
    assert "(3 in a row)" in problem and "last error: NOT_COORDINATOR" in problem
    # Commits that succeed again, or a driver that is gone, say nothing of it.
    healthy = replace(failing, lag_commits_failing_since_ms=None, lag_commit_failures_in_a_row=0)
    assert job_row(facts(lease=lease(), progress=healthy)).problems == ()
    assert job_row(facts(stopped=stopped(), progress=failing)).problems == ()
