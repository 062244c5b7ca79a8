"""Lag commits run in a spawned child; its failures and its death reach the caller as
LagCommitError, never as a crash of the caller."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.spark.lag_worker import LagCommitError, LagCommitProcess

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
