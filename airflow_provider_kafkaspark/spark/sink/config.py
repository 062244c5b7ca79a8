"""What an exactly-once sink task needs, and the names the protocol gives its Kafka objects.

The driver builds one `SinkTaskConfig` per micro-batch and Spark pickles it to the executors
with the task function: it holds plain data only. The protocol is described in
`docs/exactly_once_sink.md`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Partition of the sink topic whose consumer-group offsets hold the markers: the one
# partition every topic has (see "The marker topic-partition" in the docs page).
MARKER_PARTITION = 0

# Column the driver adds when several slots share a Spark task (a coalesced batch): the index of
# the task each row came from before the coalesce, which `SinkTaskConfig.slot` maps to a slot.
SLOT_INDEX_COLUMN = "_kafkaspark_slot_index"


@dataclass(frozen=True)
class SinkTaskConfig:
    """Everything a task needs, as plain data: this is what gets pickled to executors."""

    # The producer's settings, transactional.id aside (set per task on the executor).
    producer_config: dict[str, Any]
    # The marker consumer's settings, group.id and isolation.level aside.
    consumer_config: dict[str, Any]
    topic: str
    sink_id: str
    query_id: str
    # The columns of the rows handed to the task, `value` first (`schema.sink_columns`).
    columns: tuple[str, ...]
    # Seconds one blocking client call (init, marker read, send offsets, commit, abort) may take.
    operation_timeout_s: float
    # Keep producers and marker consumers in the Python worker between tasks.
    reuse_clients: bool = True
    # The Spark driver's pid, for the crash hook (`fault_points.maybe_crash`).
    driver_pid: int = 0
    # The slot of each task index (`slots`); None: the index itself.
    slots: tuple[int, ...] | None = None
    # The crash point armed for this batch (`fault_points.DURING_SINK_WRITE`), decided once on
    # the driver; None, always, outside crash tests.
    crash: str | None = None

    def slot(self, index: int) -> int:
        """The slot, which names the transactional id and marker, of task index `index`."""
        return index if self.slots is None else int(self.slots[index])


def marker_group(sink_id: str, query_id: str, task: int) -> str:
    """The consumer group whose committed offset says which batch task `task` committed."""
    return f"{sink_id}.{query_id}.p{task}"


def transactional_id(sink_id: str, task: int) -> str:
    """The transactional.id of output task `task`: the same for every batch and every run."""
    return f"{sink_id}-{task}"


def already_committed(marker_offset: int, batch_id: int) -> bool:
    """True if a marker offset says batch `batch_id` was committed (offset is batch + 1).

    A missing marker (librdkafka's OFFSET_INVALID, -1001) is never committed.
    """
    return marker_offset > batch_id
