"""Progress and lag visibility, driven by Spark's StreamingQueryListener.

After each batch: a compact `progress.json` in the control folder (last N batches), one log
line, and the batch's end offsets committed to a consumer group so Kafka's own
`kafka-consumer-groups --describe` and Burrow-style tools see the job's position and lag
(Spark's Kafka source commits nothing itself: SPARK-27549 never merged). The offsets are
committed for monitoring only; the checkpoint stays the source of truth, and a failed commit
is logged and counted, never fatal.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

from pyspark.sql.streaming.listener import StreamingQueryListener

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.control.reports import BatchProgress, ProgressFile
from airflow_provider_kafkaspark.core.kafka.offsets import offsets_json, parse_kafka_offsets
from airflow_provider_kafkaspark.errors import InvalidInputError

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.core.kafka.offsets import TopicOffsets

log = logging.getLogger("kafkaspark.progress")

ControlOffsets = dict[str, dict[str, int]]


def progress_offsets(value: Any) -> ControlOffsets:
    """A progress event's offsets (JSON text or a dict) in the control-file form; empty for
    a source that is not Kafka."""
    if value is None:
        return {}
    try:
        raw = json.loads(value) if isinstance(value, str) else value
        parsed = parse_kafka_offsets(raw, where="progress offsets")
    except (json.JSONDecodeError, InvalidInputError):
        return {}
    return offsets_json(parsed)


class GroupOffsetCommitter(Protocol):
    """What makes the commits: a KafkaFacade, or spark.lag_worker.LagCommitProcess."""

    def commit_group_offsets(self, group_id: str, offsets: TopicOffsets) -> None: ...


class LagCommitter:
    """Commits end offsets to the lag group on one background thread, in batch order."""

    def __init__(self, kafka: GroupOffsetCommitter, group: str) -> None:
        self.kafka = kafka
        self.group = group
        self.ok = 0
        self.failed = 0
        self.last_error: str | None = None
        # When the current run of failures began (the driver's clock), None while commits
        # succeed: what progress.json, the jobs view and the watcher's gauge show.
        self.failing_since_ms: int | None = None
        self.failures_in_a_row = 0
        self.last_committed: ControlOffsets = {}
        self.commit_ms: deque[float] = deque(maxlen=1000)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafkaspark-lag")
        self._lock = threading.Lock()

    def submit(self, offsets: ControlOffsets) -> None:
        if offsets:
            self._pool.submit(self.commit, offsets)

    def commit(self, offsets: ControlOffsets) -> bool:
        nested = {t: {int(p): o for p, o in ps.items()} for t, ps in offsets.items()}
        started = time.perf_counter()
        try:
            self.kafka.commit_group_offsets(self.group, nested)
        except Exception as exc:  # noqa: BLE001 - monitoring only: never fail the query
            with self._lock:
                self.failed += 1
                self.failures_in_a_row += 1
                self.last_error = str(exc)
                if self.failing_since_ms is None:
                    self.failing_since_ms = now_ms()
            log.warning(
                "lag commit to group %s failed (%d in a row, %d so far): %s",
                self.group,
                self.failures_in_a_row,
                self.failed,
                exc,
            )
            return False
        with self._lock:
            if self.failing_since_ms is not None:
                log.info(
                    "lag commits to group %s resumed after %d failures in a row",
                    self.group,
                    self.failures_in_a_row,
                )
            self.ok += 1
            self.failures_in_a_row = 0
            self.failing_since_ms = None
            self.last_error = None
            self.last_committed = offsets
            self.commit_ms.append((time.perf_counter() - started) * 1000)
        return True

    def flush(self, timeout_s: float = 30.0) -> None:
        """Wait until the queued commits are done (at shutdown)."""
        done = threading.Event()
        self._pool.submit(done.set)
        done.wait(timeout_s)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        close = getattr(self.kafka, "close", None)
        if callable(close):
            close()


class ProgressListener(StreamingQueryListener):
    """Writes progress.json and queues lag commits for one query of the session."""

    def __init__(
        self,
        control: ControlFolder,
        *,
        keep_batches: int = 20,
        lag: LagCommitter | None = None,
    ) -> None:
        super().__init__()
        self.control = control
        self.lag = lag
        self.query_id: str | None = None
        self.batches: deque[BatchProgress] = deque(maxlen=keep_batches)
        self.listener_ms: deque[float] = deque(maxlen=1000)
        self.batch_ms: deque[float] = deque(maxlen=1000)
        self._seen = threading.Condition()

    def wait_for_batch(self, batch_id: int, timeout_s: float) -> bool:
        """Wait until the progress of `batch_id` was handled. Listener events arrive on
        Spark's listener bus, after the batch: a driver that stops right after a batch
        waits for them so that progress.json and the lag group include that batch."""
        with self._seen:
            return self._seen.wait_for(
                lambda: bool(self.batches) and self.batches[-1].batch_id >= batch_id, timeout_s
            )

    def watch(self, query_id: str) -> None:
        self.query_id = query_id

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        if self.query_id is not None and str(progress.id) != self.query_id:
            return
        started = time.perf_counter()
        source = progress.sources[0] if progress.sources else None
        end = progress_offsets(source.endOffset if source else None)
        batch = BatchProgress(
            batch_id=int(progress.batchId),
            timestamp=str(progress.timestamp),
            num_input_rows=int(progress.numInputRows),
            input_rows_per_second=_rate(progress.inputRowsPerSecond),
            processed_rows_per_second=_rate(progress.processedRowsPerSecond),
            duration_ms={str(k): int(v) for k, v in dict(progress.durationMs).items()},
            end_offsets=end,
            latest_offsets=progress_offsets(source.latestOffset if source else None),
        )
        self.batches.append(batch)
        if self.lag is not None:
            self.lag.submit(end)
        try:
            self.control.write_progress(
                ProgressFile(
                    query_id=str(progress.id),
                    run_id=str(progress.runId),
                    updated_at_ms=now_ms(),
                    batches=tuple(self.batches),
                    lag_commits_ok=self.lag.ok if self.lag else 0,
                    lag_commits_failed=self.lag.failed if self.lag else 0,
                    lag_commits_failing_since_ms=self.lag.failing_since_ms if self.lag else None,
                    lag_commit_failures_in_a_row=self.lag.failures_in_a_row if self.lag else 0,
                    lag_commit_error=self.lag.last_error if self.lag else None,
                )
            )
        except Exception as exc:  # noqa: BLE001 - a progress file must never stop the query
            log.warning("progress.json not written: %s", exc)
        self.listener_ms.append((time.perf_counter() - started) * 1000)
        self.batch_ms.append(float(batch.duration_ms.get("triggerExecution", 0)))
        with self._seen:
            self._seen.notify_all()
        log.info(
            "batch %d: %d rows, %.0f rows/s, %d ms, end offsets %s",
            batch.batch_id,
            batch.num_input_rows,
            batch.processed_rows_per_second,
            batch.duration_ms.get("triggerExecution", 0),
            json.dumps(end, sort_keys=True),
        )

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        if event.exception:
            log.error("query %s terminated with: %s", event.id, event.exception)


def _rate(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if number != number else round(number, 1)  # NaN when nothing was read
