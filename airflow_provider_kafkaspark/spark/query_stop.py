"""Stopping a streaming query so that the stop takes effect at once, even on Spark 3.5.

`StreamingQuery.stop()` interrupts the query's thread and waits for it to end. On Spark 3.5
the interrupt can be lost: when it lands while the thread writes the next batch's offsets
to a checkpoint on the local file system, Hadoop's `RawLocalFileSystem` is running `chmod`
through its `Shell`, which catches the interrupt, logs "Interrupted while joining" and goes
on. The query then ran that next batch to its end before it noticed the stop (seen in
`test_a_job_that_is_behind_stops_at_the_batch_boundary_when_asked`, 4 runs in 7: a stop at
the batch boundary let one more batch commit). Spark's `stop()` interrupts again each time
it is called while the thread is alive, so the stop is asked again until the thread has
ended.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger("kafkaspark.driver")

# Seconds between two stop requests while the query's thread goes on, and how many at most:
# a query that a batch keeps busy longer than this ends when Spark's own stop wait does.
REPEAT_S = 0.5
ATTEMPTS = 20


def stop_query(
    query: StreamingQuery, *, repeat_s: float = REPEAT_S, attempts: int = ATTEMPTS
) -> None:
    """`query.stop()`, asked again every `repeat_s` while the first call has not returned
    (its interrupt may have been lost), at most `attempts` times; returns once the first
    call returned, raising what it raised."""
    failed: list[BaseException] = []

    def first_stop() -> None:
        try:
            query.stop()
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            failed.append(exc)

    first = threading.Thread(target=first_stop, name="kafkaspark-stop", daemon=True)
    first.start()
    for attempt in range(1, attempts):
        first.join(repeat_s)
        if not first.is_alive():
            break
        log.info("the query has not stopped after %.1fs: asking again", attempt * repeat_s)
        threading.Thread(target=query.stop, name="kafkaspark-stop-again", daemon=True).start()
    first.join()
    if failed:
        raise failed[0]
