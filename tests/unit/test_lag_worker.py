"""Lag commits run in a spawned child; its failures and its death reach the caller as
LagCommitError, never as a crash of the caller; errors in a row replace the child's client."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.spark.lag_worker import (
    REPLACE_AFTER_FAILURES,
    LagCommitError,
    LagCommitProcess,
    replace_client,
)
from airflow_provider_kafkaspark.spark.progress import LagCommitter

UNREACHABLE = {"bootstrap.servers": "127.0.0.1:1"}


def test_a_failed_commit_is_an_error_and_a_dead_child_is_replaced() -> None:
    committer = LagCommitProcess(UNREACHABLE, timeout_s=1.0)
    try:
        with pytest.raises(LagCommitError, match=r"127\.0\.0\.1:1"):
            committer.commit_group_offsets("g", {"t": {0: 5}})
        first = committer._process
        assert first is not None and first.is_alive()
        first.kill()  # as a librdkafka abort would end it
        first.join(5)
        with pytest.raises(LagCommitError):
            committer.commit_group_offsets("g", {"t": {0: 6}})
        assert committer.restarts == 1
        assert committer._process is not None and committer._process.pid != first.pid
    finally:
        committer.close()
    assert committer._process is None


def test_errors_in_a_row_replace_the_client_and_a_success_resets_the_count() -> None:
    assert not replace_client(1) and replace_client(REPLACE_AFTER_FAILURES)
    assert replace_client(1, coordinator_moved=True)  # only a new client finds the new one
    committer = LagCommitProcess(UNREACHABLE, timeout_s=1.0)
    try:
        with pytest.raises(LagCommitError):
            committer.commit_group_offsets("g", {"t": {0: 5}})
        first = committer._process
        assert first is not None and first.is_alive()  # one error: the same client again
        with pytest.raises(LagCommitError, match="2 failures in a row: a new client"):
            committer.commit_group_offsets("g", {"t": {0: 5}})
        assert committer._process is not None and not committer._process.is_alive()
        with pytest.raises(LagCommitError):
            committer.commit_group_offsets("g", {"t": {0: 5}})
        assert committer.restarts == 1 and committer._process.pid != first.pid
        assert committer.failures_in_a_row == 3
    finally:
        committer.close()


class FlakyCommitter:
    """A stand-in for the child: fails while told to (pure logic of the counting)."""

    def __init__(self) -> None:
        self.failing = True

    def commit_group_offsets(self, group_id: str, offsets: object) -> None:
        if self.failing:
            raise LagCommitError("NOT_COORDINATOR")


def failing(lag: LagCommitter) -> tuple[int | None, int, str | None]:
    return lag.failing_since_ms, lag.failures_in_a_row, lag.last_error


def test_the_committer_says_since_when_commits_fail_until_one_succeeds() -> None:
    flaky = FlakyCommitter()
    lag = LagCommitter(flaky, "kafkaspark.j")
    try:
        assert not lag.commit({"t": {"0": 1}})
        since, in_a_row, error = failing(lag)
        assert since is not None and in_a_row == 1 and error == "NOT_COORDINATOR"
        assert not lag.commit({"t": {"0": 2}})
        assert failing(lag) == (since, 2, "NOT_COORDINATOR")
        flaky.failing = False
        assert lag.commit({"t": {"0": 3}})
        assert failing(lag) == (None, 0, None)
        assert lag.failed == 2 and lag.ok == 1
    finally:
        lag.close()
