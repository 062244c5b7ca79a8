"""Executor side: one Spark task that writes the rows of several slots (a coalesced batch).

The rows carry the index of the task they came from before the coalesce (column
`SLOT_INDEX_COLUMN`), and a coalesce hands a task its parents one after the other, so each
index is one run of rows. Each slot is written as `task` writes a task's slot: its own
producer and marker, one transaction, skipped if its marker says it committed before.

The slots' protocols are independent of one another (other transactional ids, other marker
groups), so they run at once, each in a thread of its own: the Kafka round trips of one slot
(a producer's creation and `init_transactions()`, the marker read, the marker's offsets, the
commit) overlap with another slot's. Measured on the project's machine, those round trips
were about 40 ms a slot, paid one slot after the other before. The task's main thread reads
the Arrow stream and hands each slot's record batches to the slot's thread through a short
queue, so a slot's rows are held in memory only a few record batches ahead of its producer.
confluent_kafka releases the GIL while it waits on the network.

pyarrow is imported inside functions only.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from itertools import groupby
from typing import Any

from airflow_provider_kafkaspark.spark.sink.config import SLOT_INDEX_COLUMN, SinkTaskConfig
from airflow_provider_kafkaspark.spark.sink.rows import arrow_rows
from airflow_provider_kafkaspark.spark.sink.task import write_slot
from airflow_provider_kafkaspark.spark.sink.worker_imports import make_zip_invalidation_lazy

# Slots of one task written at once. Each has a producer with its own threads and
# connections; rows come one slot after another, so beyond a few the overlap gains nothing.
MAX_CONCURRENT_SLOTS = 4

# Record batches (up to spark.sql.execution.arrow.maxRecordsPerBatch rows each) a slot's rows
# may be read ahead of its producer.
QUEUED_BATCHES = 2

# Seconds between two looks at whether a slot's thread has ended, while its queue is full.
_PUT_WAIT_S = 0.05


class _End:
    """The end of a slot's rows."""


class _Stopped:
    """The task failed elsewhere: the slot must not commit what it has."""

    def __init__(self, reason: BaseException) -> None:
        self.reason = reason


class SliceFeed:
    """A slot's record batches, from the task's main thread to the slot's thread."""

    def __init__(self, size: int = QUEUED_BATCHES) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=size)

    def put(self, item: Any, writer: Future[Any], failed: threading.Event) -> bool:
        """Queue `item`; False if the slot's thread has ended (it failed, or its marker said
        the slot committed before and it reads no more rows) or another slot failed."""
        while True:
            if writer.done() or failed.is_set():
                return False
            try:
                self._queue.put(item, timeout=_PUT_WAIT_S)
                return True
            except queue.Full:
                continue

    def close(self, writer: Future[Any], failed: threading.Event) -> None:
        """No more rows for the slot."""
        self.put(_End(), writer, failed)

    def stop(self, reason: BaseException) -> None:
        """Make the slot's rows fail (its open transaction is aborted), whatever is queued."""
        while True:
            try:
                self._queue.put_nowait(_Stopped(reason))
                return
            except queue.Full:
                try:
                    self._queue.get_nowait()  # the slot will not write it anyway
                except queue.Empty:
                    continue

    def items(self) -> Iterator[Any]:
        """The queued record batches, in order, until the end; raises if stopped."""
        while True:
            item = self._queue.get()
            if isinstance(item, _End):
                return
            if isinstance(item, _Stopped):
                raise RuntimeError(
                    f"exactly-once sink: the task failed while this slot's rows were read "
                    f"({item.reason!r}); the slot's transaction is not committed"
                )
            yield item


def write_shared_arrow_task(
    config: SinkTaskConfig, batch_id: int, batches: Iterable[Any]
) -> Iterator[Any]:
    """Executor side, for `mapInArrow` over a coalesced batch: the slots of this task's rows,
    each written in a transaction of its own, at once (see the module's docstring).

    Yields one record batch with a row per slot that had rows: its TaskResult as JSON, in
    column `result`, in the order the slots came.
    """
    import pyarrow as pa

    make_zip_invalidation_lazy()

    def write(index: int, slices: Iterator[Any]) -> dict[str, Any]:
        return write_slot(config, batch_id, config.slot(index), arrow_rows(slices, config.columns))

    results = [json.dumps(r) for r in write_concurrently(index_groups(batches), write)]
    yield pa.RecordBatch.from_arrays([pa.array(results, type=pa.string())], names=["result"])


def write_concurrently(
    groups: Iterable[tuple[int, Iterable[Any]]],
    write: Callable[[int, Iterator[Any]], dict[str, Any]],
    *,
    concurrency: int = MAX_CONCURRENT_SLOTS,
) -> list[dict[str, Any]]:
    """`write(index, items)` for each group, at most `concurrency` at once, each in a thread
    fed from this one; returns their results in the groups' order.

    Raises the first failure, of a slot or of reading the groups, once every slot's thread
    has ended; the slots still writing then are made to fail before they commit.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    started: list[tuple[Future[dict[str, Any]], SliceFeed]] = []
    failed = threading.Event()

    def note_failure(future: Future[dict[str, Any]]) -> None:
        if future.exception() is not None:
            failed.set()

    with ThreadPoolExecutor(concurrency, thread_name_prefix="kafkaspark-sink-slot") as pool:
        try:
            for index, items in groups:
                running = {future for future, _ in started if not future.done()}
                while len(running) >= concurrency:
                    running = wait(running, return_when=FIRST_COMPLETED).not_done
                _raise_first_failure(started)
                feed = SliceFeed()
                writer = pool.submit(write, index, feed.items())
                writer.add_done_callback(note_failure)
                started.append((writer, feed))
                for item in items:
                    if not feed.put(item, writer, failed):
                        break
                feed.close(writer, failed)
                _raise_first_failure(started)
        except BaseException as exc:
            for _, feed in started:
                feed.stop(exc)
            raise
    return [future.result() for future, _ in started]


def _raise_first_failure(started: list[tuple[Future[dict[str, Any]], SliceFeed]]) -> None:
    for future, _ in started:
        if future.done() and future.exception() is not None:
            future.result()


def index_groups(batches: Iterable[Any]) -> Iterator[tuple[int, Iterator[Any]]]:
    """(index, its record batch slices) for each task index in `SLOT_INDEX_COLUMN`, in order.

    A group need not be consumed before the next is asked for. An index that comes back
    after another one is refused: its two runs would be two transactions for one (batch,
    slot), and the second would find the marker moved and skip its rows.
    """
    seen: set[int] = set()
    for index, runs in groupby(index_runs(batches), key=lambda run: run[0]):
        if index in seen:
            raise RuntimeError(
                f"exactly-once sink: the rows of task index {index} came in two runs; a "
                "slot's rows must be written in one transaction"
            )
        seen.add(index)
        yield index, (run for _, run in runs)


def index_runs(batches: Iterable[Any]) -> Iterator[tuple[int, Any]]:
    """(index, slice) for each run of rows with one `SLOT_INDEX_COLUMN` value, in order."""
    import pyarrow.compute as pc

    for batch in batches:
        size = batch.num_rows
        if not size:
            continue
        indexes = batch.column(SLOT_INDEX_COLUMN)
        changes = pc.indices_nonzero(
            pc.not_equal(indexes.slice(1), indexes.slice(0, size - 1))
        ).to_pylist()
        start = 0
        for end in [*(change + 1 for change in changes), size]:
            yield int(indexes[start].as_py()), batch.slice(start, end - start)
            start = end
