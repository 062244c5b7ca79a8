"""When a stopping driver stops its query: at a quiet moment, or at the next batch boundary.

Spark runs one trigger after another. A trigger whose batch takes longer than the trigger
interval is followed by the next one at once, so a stop that waits for a moment with no
trigger active waits through batch after batch while the job is behind (in a benchmark,
up to 9 batches). That quiet-moment stop leaves no planned batch behind, which every restore
mode needs: an `offsets`-mode restore refuses a savepoint with a pending batch.

A stop requested `at_batch_boundary` does not wait for quiet. Spark reports a finished
trigger (`lastProgress` changes) only after the trigger's batch committed, so the driver
stops its query as soon as either no trigger is active or the trigger that was active at
the request has been reported finished. When Spark has already planned the next batch by
then (it writes that batch's offsets ~50 ms after the trigger ends, so a job that is behind
almost always has), `query.stop()` cuts it short: the checkpoint keeps the planned batch,
which the next driver, or a `checkpoint`-mode restore of the savepoint, runs again with the
same offsets. The restart window asks for it, since it restores in `checkpoint` mode.

Pure decisions over what the driver observes, unit-tested without Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FinishedTrigger:
    """The last trigger Spark reported finished: its batch id and its start timestamp (a
    no-data trigger may report the same batch id as the one before it, never the same
    timestamp)."""

    batch_id: int
    timestamp: str

    @classmethod
    def of(cls, progress: Mapping[str, Any] | None) -> FinishedTrigger | None:
        """From a `StreamingQuery.lastProgress` (a dict in Spark 3.5, a dict subclass in 4.0)."""
        if not progress:
            return None
        batch_id = progress.get("batchId")
        if not isinstance(batch_id, int):
            return None
        return cls(batch_id, str(progress.get("timestamp", "")))


def may_stop_now(
    *,
    trigger_active: bool,
    at_batch_boundary: bool,
    finished_at_request: FinishedTrigger | None,
    finished_now: FinishedTrigger | None,
) -> bool:
    """Whether the query may be stopped now: no trigger runs, or, at the batch boundary, a
    trigger finished since the request (the one then in flight, whose batch has committed)."""
    if not trigger_active:
        return True
    if not at_batch_boundary:
        return False
    return finished_now is not None and finished_now != finished_at_request


def stopped_cleanly(*, pending_batch: int | None, cut_allowed: bool) -> bool:
    """The stopped report's `clean`: no batch was left behind whose re-run could write
    anything twice. `cut_allowed`: the stop was asked at the batch boundary, drained (not
    interrupted by its bound), and the sink is replay-safe (the exactly-once Kafka sink,
    Spark's file sinks), so a batch Spark had planned as the stop ended the query is
    re-run by the next driver with the same offsets and written once. Spark's at-least-once
    Kafka sink may write again what a cut-short attempt wrote, and a quiet-moment stop that
    found a planned batch lost a race with Spark's trigger, which it reports."""
    return pending_batch is None or cut_allowed
