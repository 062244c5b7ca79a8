"""What a driver (or its supervisor) writes back: the stopped report, standby readiness,
the supervisor's state, the progress of its last batches, and the Spark that wrote last."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class StoppedReport:
    """What the driver leaves when it drains and exits (or fails to)."""

    stopped_at_ms: int
    reason: str
    clean: bool  # True when the last planned batch was committed before exit
    last_planned_batch: int | None
    last_committed_batch: int | None
    offsets: dict[str, dict[str, int]] = field(default_factory=dict)
    owner_id: str | None = None
    message: str = ""
    # The driver's exit code: 4 (bad job) is final, the supervisor does not restart it.
    exit_code: int | None = None
    # The Spark that wrote the checkpoint (the driver's, not the stopper's): what a savepoint
    # of it records. None from drivers of earlier releases.
    spark_version: str | None = None
    # The stop request this report answers (None: SIGTERM, a failure, the end of the input):
    # how a retried stop recognises the stop its earlier try made.
    requested_by: str | None = None
    requested_at_ms: int | None = None

    def describe(self) -> str:
        at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.stopped_at_ms / 1000))
        text = (
            f"the driver stopped at {at} ({self.reason}; last committed batch "
            f"{self.last_committed_batch}, {'clean' if self.clean else 'not clean'})"
        )
        return f"{text}: {self.message}" if self.message else text


@dataclass(frozen=True)
class StandbyReady:
    """Written by a standby driver once it has warmed up and waits for its handover."""

    token: str
    ready_at_ms: int
    warm_up_s: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SupervisorState:
    """What the local supervisor says of its runner; `ended` once it restarts no more."""

    attempt: int
    runner_pid: int
    started_at_ms: int
    policy: dict[str, Any] = field(default_factory=dict)
    last_exit: int | None = None
    exited_at_ms: int | None = None
    gave_up: bool | None = None
    ended: bool = False


@dataclass(frozen=True)
class BatchProgress:
    batch_id: int
    timestamp: str
    num_input_rows: int
    input_rows_per_second: float
    processed_rows_per_second: float
    duration_ms: dict[str, int]
    end_offsets: dict[str, dict[str, int]]
    latest_offsets: dict[str, dict[str, int]]


@dataclass(frozen=True)
class ProgressFile:
    """A compact, bounded record of the last batches, for sensors and people."""

    query_id: str
    run_id: str
    updated_at_ms: int
    batches: tuple[BatchProgress, ...] = ()
    lag_commits_ok: int = 0
    lag_commits_failed: int = 0
    # While lag commits fail: since when (the driver's clock), how many in a row, and the last
    # error. The lag group then shows a lag the job does not have.
    lag_commits_failing_since_ms: int | None = None
    lag_commit_failures_in_a_row: int = 0
    lag_commit_error: str | None = None

    def lag_commits_failing(self) -> str | None:
        """`lag commits failing since ...`, or None while they succeed."""
        if self.lag_commits_failing_since_ms is None:
            return None
        at = time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.lag_commits_failing_since_ms / 1000)
        )
        text = (
            f"lag commits failing since {at} ({self.lag_commit_failures_in_a_row} in a row): "
            "the lag group shows a lag the job may not have"
        )
        return f"{text}; last error: {self.lag_commit_error}" if self.lag_commit_error else text

    @property
    def last_batch(self) -> BatchProgress | None:
        return self.batches[-1] if self.batches else None


@dataclass(frozen=True)
class WrittenBy:
    """The newest Spark that wrote a checkpoint: recorded by each driver as it starts and by a
    restore from the savepoint's manifest, so that an earlier Spark is refused
    (`core/state/spark_compat.py`)."""

    spark_version: str
    recorded_at_ms: int
