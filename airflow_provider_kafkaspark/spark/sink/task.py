"""Executor side of the exactly-once sink: one output task of one micro-batch.

`write_slot` runs the protocol of `docs/exactly_once_sink.md` for one slot of a batch: read
the marker, skip a batch the slot committed before, else write the marker and the rows in
one transaction. `write_task` (row tuples, `mapPartitionsWithIndex`) and `write_arrow_task`
(Arrow record batches, `mapInArrow`) call it for a task's one slot; `shared_task` for
each of the slots a coalesced task was given. The clients come from, and go back to, the
worker's cache (`clients`); the Kafka calls and their errors are `TaskProducer`'s
(`producer`).

confluent_kafka, pyarrow and pyspark are imported inside functions only.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from itertools import chain, islice
from typing import Any, TypeVar

from airflow_provider_kafkaspark.spark.sink.clients import CLIENTS, fingerprint
from airflow_provider_kafkaspark.spark.sink.config import (
    SinkTaskConfig,
    already_committed,
)
from airflow_provider_kafkaspark.spark.sink.fault_points import DURING_SINK_WRITE, maybe_crash
from airflow_provider_kafkaspark.spark.sink.producer import TaskProducer, TaskProducerError
from airflow_provider_kafkaspark.spark.sink.rows import arrow_rows, plain_rows
from airflow_provider_kafkaspark.spark.sink.worker_imports import make_zip_invalidation_lazy

# The sink's modules log under one name, the one its users configure.
log = logging.getLogger("airflow_provider_kafkaspark.spark.sink")

T = TypeVar("T")

# Seconds a marker read through reused clients may take before the task gives them up and
# starts over with new ones. The read waits only while a transactional offset commit for
# the marker group is pending, and a reused producer has no open transaction: a pending
# commit belongs to a newer producer with the same transactional.id (which has fenced the
# reused one), possibly dead. A new producer aborts it at once instead of waiting for it to
# time out. A healthy read takes milliseconds.
REUSED_MARKER_TIMEOUT_S = 5.0

STATUS_WRITTEN = "written"
STATUS_SKIPPED = "skipped"
STATUS_EMPTY = "empty"

# How a task got its transactional producer (TaskResult.producer).
PRODUCER_CREATED = "created"  # none cached in this worker: created, init_transactions()
PRODUCER_REUSED = "reused"  # cached in this worker by an earlier task with the same id
PRODUCER_REPLACED = "replaced"  # the cached one failed before writing: created anew


@dataclass(frozen=True)
class TaskResult:
    """What one output task did; returned from the executor to the driver."""

    task: int
    status: str  # written | skipped | empty
    rows: int
    seconds: float
    # Seconds per phase: first_row, create, connect, init_transactions, marker,
    # send_offsets, produce, commit, replace (a failed reused producer), close (clients
    # not kept).
    phases: dict[str, float] = field(default_factory=dict)
    producer: str = ""  # created | reused | replaced
    worker_pid: int = 0  # the Python worker that ran the task


class _Clock:
    """Seconds spent in each phase of one task, for TaskResult.phases."""

    def __init__(self) -> None:
        self.started = self._mark = time.monotonic()
        self.phases: dict[str, float] = {}

    def lap(self, phase: str) -> None:
        now = time.monotonic()
        self.phases[phase] = round(self.phases.get(phase, 0.0) + now - self._mark, 4)
        self._mark = now

    def seconds(self) -> float:
        return round(time.monotonic() - self.started, 3)


def write_indexed_task(
    config: SinkTaskConfig, batch_id: int, index: int, rows: Iterable[Any]
) -> Iterator[dict[str, Any]]:
    """`write_task` for the task with partition index `index` (`mapPartitionsWithIndex`)."""
    return write_task(config, batch_id, config.slot(index), rows)


def write_task(
    config: SinkTaskConfig, batch_id: int, task: int, rows: Iterable[Any]
) -> Iterator[dict[str, Any]]:
    """Executor side: write task `task` of batch `batch_id` in one transaction, or skip it.

    Yields one TaskResult as a dict. Raises (never swallows) when Kafka refuses, so that
    Spark fails the task; abortable errors abort the transaction first. A reused producer
    (see "Client reuse" in docs/exactly_once_sink.md) that fails before the task has
    produced anything is replaced by a new one within the task, which starts the protocol
    over.
    """
    make_zip_invalidation_lazy()
    yield write_slot(config, batch_id, task, plain_rows(rows, config.columns))


def write_arrow_task(
    config: SinkTaskConfig, batch_id: int, batches: Iterable[Any]
) -> Iterator[Any]:
    """Executor side, for `mapInArrow`: `write_task` for this task's Arrow record batches.

    The task is the slot of the partition index (see `slots`). Yields one record batch
    with one row: the TaskResult as JSON, in column `result`.
    """
    import pyarrow as pa
    from pyspark import TaskContext

    make_zip_invalidation_lazy()
    context = TaskContext.get()
    if context is None:
        raise RuntimeError("write_arrow_task runs only inside a Spark task")
    task = config.slot(context.partitionId())
    result = write_slot(config, batch_id, task, arrow_rows(batches, config.columns))
    yield pa.RecordBatch.from_arrays([pa.array([json.dumps(result)])], names=["result"])


def write_slot(
    config: SinkTaskConfig, batch_id: int, task: int, rows: Iterator[Any]
) -> dict[str, Any]:
    clock = _Clock()
    timeout = config.operation_timeout_s
    reuse = config.reuse_clients
    clients = TaskProducer(config, batch_id, task, lap=clock.lap)
    txn_id, group = clients.transactional_id, clients.group
    producer_key = fingerprint(config.producer_config)
    consumer_key = fingerprint(config.consumer_config)
    # The marker as this slot's producer last read or committed it: see "Markers a producer
    # already knows" in docs/exactly_once_sink.md. Kept with the producer, for the next task.
    known_marker: int | None = None
    if reuse:
        clients.producer, clients.consumer, known_marker = CLIENTS.take_with_marker(
            txn_id, producer_key, group, consumer_key
        )
    origin = PRODUCER_REUSED if clients.producer is not None else PRODUCER_CREATED
    count = 0
    keep = False
    try:
        # Only this first row is read before the transaction is open, and it is kept: whatever
        # happens to a reused producer before then, the task can start over with all its rows.
        # Inside the try: rows that fail to arrive close the clients taken above.
        first = next(rows, None)
        clock.lap("first_row")
        while True:
            reused = clients.producer is not None
            if first is not None:
                # Created before the producer: it finds its group coordinator in the
                # background while the producer connects and fences, so the marker read
                # after that does not wait for it.
                clients.ensure_consumer()
            clients.ensure_producer()
            step = "marker"
            try:
                if first is None:
                    status = STATUS_EMPTY
                    break
                if reused and known_marker is not None:
                    # No request: what the producer saw last is the marker for as long as no
                    # other producer with its transactional.id ran, and one that did has
                    # fenced it, which the transaction below finds out before any row.
                    marker, group_metadata = known_marker, clients.group_metadata()
                else:
                    # Another producer with this transactional.id (another worker, a
                    # restarted job) may have committed this batch.
                    marker, group_metadata = clients.read_marker(
                        min(timeout, REUSED_MARKER_TIMEOUT_S) if reused else timeout
                    )
                known_marker = marker
                clock.lap("marker")
                if already_committed(marker, batch_id):
                    status = STATUS_SKIPPED
                    break
                step = "transaction"
                clients.open_transaction(group_metadata)
                clock.lap("send_offsets")
                status = STATUS_WRITTEN
                break
            except TaskProducerError as exc:
                if not reused:
                    raise
                # Fenced by a newer producer with the same transactional.id, expired, or
                # left in a bad state: never reuse it. Nothing of this task was produced
                # yet; a new producer fences every other one and aborts what they left
                # open, and the marker is read again after that. Errors of either kind: a
                # fatal one may be the reused clients' own too, and if it is not, the new
                # producer meets it again and fails the task.
                log.info(
                    "exactly-once sink %s: task %d of batch %d: the reused producer for "
                    "transactional.id %s failed before writing (%s); replacing it",
                    config.sink_id,
                    task,
                    batch_id,
                    txn_id,
                    exc,
                )
                clients.drop_producer()
                known_marker = None
                if step == "marker":
                    # The read itself failed: a new consumer too. After a refused marker
                    # the consumer is fine, and already knows its coordinator.
                    clients.drop_consumer()
                origin = PRODUCER_REPLACED
                clock.lap("replace")
        if status == STATUS_WRITTEN:
            count = _write_rows(clients, config, batch_id, task, first, rows, clock)
            known_marker = batch_id + 1
        keep = reuse
    finally:
        if keep and clients.producer is not None:
            CLIENTS.put(
                txn_id,
                producer_key,
                clients.producer,
                group,
                consumer_key,
                clients.consumer,
                marker=known_marker,
            )
        else:
            clients.close()
            clock.lap("close")
    result = TaskResult(
        task, status, count, clock.seconds(), dict(clock.phases), origin, os.getpid()
    )
    return asdict(result)


def _write_rows(
    clients: TaskProducer,
    config: SinkTaskConfig,
    batch_id: int,
    task: int,
    first: Any,
    rest: Iterator[Any],
    clock: _Clock,
) -> int:
    """Produce the task's rows into the open transaction and commit it; returns how many."""
    rows: Iterator[Any] = chain((first,), rest)
    if task == 0 and config.crash == DURING_SINK_WRITE:
        # Armed on the driver for this batch: the crash happens between two rows, so the
        # produce loop itself never checks for it.
        crash = functools.partial(
            maybe_crash, DURING_SINK_WRITE, batch_id, driver_pid=config.driver_pid
        )
        rows = _crashing_halfway(rows, clients.flush, crash)
    count = clients.send_rows(rows)
    clock.lap("produce")
    clients.commit()
    clock.lap("commit")
    return count


def _crashing_halfway(
    rows: Iterable[T], flush: Callable[[], None], crash: Callable[[], None]
) -> Iterator[T]:
    """`rows`, then a crash once about half of them (at least one) have been produced."""
    held = list(rows)
    crash_after = max(1, len(held) // 2)
    remaining = iter(held)
    yield from islice(remaining, crash_after)
    # The first half is in the broker's log, inside the open transaction.
    flush()
    crash()
    yield from remaining
