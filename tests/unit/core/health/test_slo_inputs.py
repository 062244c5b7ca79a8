"""A watcher poll's inputs say what the driver's progress file says of its lag commits."""

from __future__ import annotations

from airflow_provider_kafkaspark.core.control.reports import ProgressFile
from airflow_provider_kafkaspark.core.health.inputs import WatchInputs
from airflow_provider_kafkaspark.core.health.slo_inputs import WatcherInputs


def inputs(progress: ProgressFile | None) -> WatcherInputs:
    return WatcherInputs(WatchInputs(None, None, None, None, None), 3, {"t": 0}, progress=progress)


def test_lag_commit_figures_come_from_the_progress_file() -> None:
    assert inputs(None).lag_commit_failures is None and inputs(None).lag_commits_failing is None
    healthy = ProgressFile("q", "r", 1)
    assert inputs(healthy).lag_commit_failures == 0 and inputs(healthy).lag_commits_failing is None
    failing = ProgressFile(
        "q",
        "r",
        1,
        lag_commits_failing_since_ms=1_795_000_000_000,
        lag_commit_failures_in_a_row=4,
        lag_commit_error="NOT_COORDINATOR",
    )
    assert inputs(failing).lag_commit_failures == 4
    assert inputs(failing).lag_commits_failing == failing.lag_commits_failing()
    assert "(4 in a row)" in (inputs(failing).lag_commits_failing or "")
