"""When a stopping driver stops its query: at the next batch boundary.

Spark runs one trigger after another. A trigger whose batch takes longer than the trigger
interval is followed by the next one at once, so a stop that waited for a moment with no
trigger active waited through batch after batch while the job was behind (in a benchmark,
up to 9 batches). Spark reports a finished trigger (`lastProgress` changes) only after the
trigger's batch committed, so the driver stops its query as soon as either no trigger is
active or the trigger that was active at the request has been reported finished. When
Spark has already planned the next batch by then, `query.stop()` interrupts it: the
checkpoint keeps the planned batch, which the next driver (or a restored savepoint) runs
again with the same offsets.

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
    finished_at_request: FinishedTrigger | None,
    finished_now: FinishedTrigger | None,
) -> bool:
    """Whether the query may be stopped now without cutting short the batch that was in
    flight when the stop was requested: no trigger runs, or a trigger finished since the
    request (the one then in flight, whose batch has committed)."""
    if not trigger_active:
        return True
    return finished_now is not None and finished_now != finished_at_request


def stopped_cleanly(*, drained: bool, pending_batch: int | None, replay_safe_sink: bool) -> bool:
    """The stopped report's `clean`: no batch was left behind whose re-run could write
    anything twice. A batch Spark had planned when a drained stop ended the query is
    re-run by the next driver with the same offsets, which a replay-safe sink (the
    exactly-once Kafka sink, Spark's file sinks) writes once; Spark's at-least-once Kafka
    sink may write again what the cut-short attempt wrote."""
    if pending_batch is None:
        return True
    return drained and replay_safe_sink
