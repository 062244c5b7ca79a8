"""An exactly-once Kafka sink for Spark Structured Streaming, used through `foreachBatch`.

    sink = ExactlyOnceKafkaSink(
        producer_config={"bootstrap.servers": "broker:9092"},
        topic="out",
        sink_id="orders-enriched",
        query_id="<the query's id, stable across restarts>",
    )
    query = df.writeStream.foreachBatch(sink).option("checkpointLocation", ckpt).start()

Each task of a micro-batch writes its rows and a marker (which batch it committed) in one
Kafka transaction, and a replayed batch skips the tasks whose marker says they committed.
How that works, and what the caller must provide for it (deterministic batches, a stable
`query_id`, read_committed readers, ...): `docs/exactly_once_sink.md`.

This module is the driver side. The executor side is `task` (one task), with
`producer` (its Kafka clients and calls), `clients` (clients kept between tasks),
`rows` (rows to produce() arguments); `config` is what the driver hands the tasks,
`schema` the checks of the batch's columns and of the settings.

confluent_kafka and pyspark are imported inside functions only: importing this module must
stay cheap (DAG files import the package), and executors import confluent_kafka themselves.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.spark.sink.clients import close_cached_clients
from airflow_provider_kafkaspark.spark.sink.config import (
    SLOT_INDEX_COLUMN,
    SinkTaskConfig,
    marker_group,
    transactional_id,
)
from airflow_provider_kafkaspark.spark.sink.consumer_warning import quiet_per_record_warning
from airflow_provider_kafkaspark.spark.sink.fault_points import (
    AFTER_SINK_COMMIT,
    DURING_SINK_WRITE,
    maybe_crash,
    should_crash,
)
from airflow_provider_kafkaspark.spark.sink.schema import (
    OWNED_CONSUMER_KEYS,
    OWNED_PRODUCER_KEYS,
    check_name,
    connection_settings,
    plain_config,
    sink_columns,
)
from airflow_provider_kafkaspark.spark.sink.shared_task import write_shared_arrow_task
from airflow_provider_kafkaspark.spark.sink.slots import task_slots
from airflow_provider_kafkaspark.spark.sink.task import (
    REUSED_MARKER_TIMEOUT_S,
    STATUS_EMPTY,
    STATUS_SKIPPED,
    STATUS_WRITTEN,
    TaskResult,
    write_arrow_task,
    write_indexed_task,
    write_task,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "DEFAULT_OPERATION_TIMEOUT_S",
    "DEFAULT_TRANSACTION_TIMEOUT_MS",
    "REUSED_MARKER_TIMEOUT_S",
    "ExactlyOnceKafkaSink",
    "SinkBatchReport",
    "SinkTaskConfig",
    "TaskResult",
    "close_cached_clients",
    "write_task",
]

log = logging.getLogger("airflow_provider_kafkaspark.spark.sink")

# Every transaction of this sink is opened and committed inside one Spark task, so no
# transaction stays open across a graceful stop or between batches. The timeout matters only
# when a driver or executor dies mid-write: the open transaction then holds back the last
# stable offset of the partitions it wrote to, and read_committed readers of those
# partitions stall until the transaction is aborted, either by the next init_transactions()
# with the same transactional.id (the restarted query's replay of that task) or by this
# timeout. Shorter unblocks readers sooner when the job stays down; it must still exceed the
# longest single task write (produce + flush + commit of one partition of one batch), or the
# coordinator aborts healthy transactions and the task fails with a fenced/abortable error.
# 60 s is generous for a micro-batch task (seconds, usually) and well under the broker's cap
# (transaction.max.timeout.ms, 15 min by default). Raise it for very large batches.
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000

# Seconds one blocking client call (init, marker read, send offsets, commit, abort) may take.
DEFAULT_OPERATION_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class SinkBatchReport:
    """What one micro-batch did, summed over its tasks."""

    batch_id: int
    tasks: int
    tasks_written: int
    tasks_skipped: int
    tasks_empty: int
    rows_written: int
    seconds: float

    @classmethod
    def of(cls, batch_id: int, results: Iterable[TaskResult], seconds: float) -> SinkBatchReport:
        results = list(results)
        return cls(
            batch_id=batch_id,
            tasks=len(results),
            tasks_written=sum(r.status == STATUS_WRITTEN for r in results),
            tasks_skipped=sum(r.status == STATUS_SKIPPED for r in results),
            tasks_empty=sum(r.status == STATUS_EMPTY for r in results),
            rows_written=sum(r.rows for r in results if r.status == STATUS_WRITTEN),
            seconds=round(seconds, 3),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ExactlyOnceKafkaSink:
    """A `foreachBatch` function that writes each batch to Kafka exactly once (see
    docs/exactly_once_sink.md)."""

    def __init__(
        self,
        *,
        producer_config: Mapping[str, Any],
        topic: str,
        sink_id: str,
        query_id: str,
        transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS,
        consumer_config: Mapping[str, Any] | None = None,
        operation_timeout_s: float = DEFAULT_OPERATION_TIMEOUT_S,
        keep_reports: int = 100,
        reuse_clients: bool = True,
        arrow: bool | None = None,
        max_tasks: int | None = None,
    ) -> None:
        """`consumer_config`: settings of the consumer that reads and commits the markers;
        by default the connection and security settings of `producer_config`.

        `reuse_clients`: keep producers and marker consumers in the Python workers between
        batches (see "Client reuse" in docs/exactly_once_sink.md); False creates and closes them
        in every task.

        `arrow`: hand the rows to the tasks as Arrow record batches (`mapInArrow`), which
        costs far less than Spark's pickled Row objects; it needs pyarrow on the driver and
        the executors (pyspark's SQL extras; this package's pyspark-client brings it). False
        uses `rdd.mapPartitionsWithIndex`. Both give every row the same task index. By
        default: Arrow if pyarrow is importable here.

        `max_tasks`: with Arrow, at most this many Spark tasks write a batch that has more
        slots (a coalesce: each task writes its slots one after the other, one transaction
        each, and a Python task's fixed cost is paid once per Spark task, not per slot). By
        default the application's default parallelism, its cores; 0 gives every slot a task
        of its own."""
        self.topic = check_name("topic", topic)
        self.sink_id = check_name("sink_id", sink_id)
        self.query_id = check_name("query_id", query_id)
        if isinstance(transaction_timeout_ms, bool) or not isinstance(transaction_timeout_ms, int):
            raise InvalidInputError(
                f"transaction_timeout_ms must be an integer, got {transaction_timeout_ms!r}"
            )
        if transaction_timeout_ms <= 0:
            raise InvalidInputError(
                f"transaction_timeout_ms must be positive, got {transaction_timeout_ms}"
            )
        if operation_timeout_s <= 0:
            raise InvalidInputError(
                f"operation_timeout_s must be positive, got {operation_timeout_s}"
            )
        self.transaction_timeout_ms = transaction_timeout_ms
        self.operation_timeout_s = float(operation_timeout_s)
        self._producer_config = plain_config(
            "producer_config", producer_config, OWNED_PRODUCER_KEYS
        )
        if str(self._producer_config.get("enable.idempotence", "true")).lower() == "false":
            raise InvalidInputError(
                "producer_config: `enable.idempotence` cannot be false: transactions need it"
            )
        if "bootstrap.servers" not in self._producer_config:
            raise InvalidInputError("producer_config: `bootstrap.servers` is missing")
        if consumer_config is None:
            self._consumer_config = connection_settings(self._producer_config)
        else:
            self._consumer_config = plain_config(
                "consumer_config", consumer_config, OWNED_CONSUMER_KEYS
            )
        self.reuse_clients = bool(reuse_clients)
        self.arrow = _pyarrow_importable() if arrow is None else bool(arrow)
        if max_tasks is not None and (
            isinstance(max_tasks, bool) or not isinstance(max_tasks, int) or max_tasks < 0
        ):
            raise InvalidInputError(
                f"max_tasks must be a non-negative integer or None, got {max_tasks!r}"
            )
        self.max_tasks = max_tasks
        self._reports: deque[SinkBatchReport] = deque(maxlen=max(1, keep_reports))
        self._task_results: deque[list[TaskResult]] = deque(maxlen=max(1, keep_reports))

    # -- naming ------------------------------------------------------------------------

    def marker_group(self, task: int) -> str:
        return marker_group(self.sink_id, self.query_id, task)

    def transactional_id(self, task: int) -> str:
        return transactional_id(self.sink_id, task)

    # -- reports -------------------------------------------------------------------------

    @property
    def reports(self) -> list[SinkBatchReport]:
        """The reports of the most recent batches (oldest first)."""
        return list(self._reports)

    @property
    def last_report(self) -> SinkBatchReport | None:
        return self._reports[-1] if self._reports else None

    @property
    def task_results(self) -> list[list[TaskResult]]:
        """The task results of the batches in `reports`, in the same order."""
        return [list(results) for results in self._task_results]

    # -- writing -------------------------------------------------------------------------

    def task_config(
        self,
        columns: Sequence[str],
        *,
        slots: Sequence[int] | None = None,
        crash: str | None = None,
    ) -> SinkTaskConfig:
        """Everything a task needs, as plain data: this is what gets pickled to executors.

        `slots`: the slot of each task index (None: the index itself); `crash`: the crash
        point armed for the batch (`fault_points`), None outside crash tests."""
        return SinkTaskConfig(
            producer_config={
                **self._producer_config,
                "enable.idempotence": True,
                "transaction.timeout.ms": self.transaction_timeout_ms,
            },
            consumer_config=dict(self._consumer_config),
            topic=self.topic,
            sink_id=self.sink_id,
            query_id=self.query_id,
            columns=tuple(columns),
            operation_timeout_s=self.operation_timeout_s,
            reuse_clients=self.reuse_clients,
            driver_pid=os.getpid(),
            slots=None if slots is None else tuple(slots),
            crash=crash,
        )

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.write_batch(batch, batch_id)

    def write_batch(self, batch: DataFrame, batch_id: int) -> SinkBatchReport:
        """Write one micro-batch; returns (and keeps) its report. Raises if any task failed."""
        if isinstance(batch_id, bool) or not isinstance(batch_id, int) or batch_id < 0:
            raise InvalidInputError(f"batch_id must be a non-negative integer, got {batch_id!r}")
        quiet_per_record_warning(batch.sparkSession)
        fields = [(f.name, f.dataType.simpleString()) for f in batch.schema.fields]
        columns = sink_columns(fields)
        started = time.monotonic()
        selected, slots, count = self._with_slots(
            self._projected(batch, fields, columns), columns, batch_id
        )
        # Armed once per batch, here, from the driver's environment (where `fault_points`
        # says to set it): task 0 then crashes halfway through its rows (`task`).
        crash = DURING_SINK_WRITE if should_crash(os.environ, DURING_SINK_WRITE, batch_id) else None
        config = self.task_config(columns, slots=slots, crash=crash)
        shared = self._shared_tasks(selected, count) if self.arrow else None
        if shared is not None:
            from pyspark.sql.functions import spark_partition_id

            # The index is taken before the coalesce, in the partitions `task_slots` read.
            tagged = selected.withColumn(SLOT_INDEX_COLUMN, spark_partition_id()).coalesce(shared)
            write_shared = functools.partial(write_shared_arrow_task, config, batch_id)
            results = [
                json.loads(row[0])
                for row in tagged.mapInArrow(write_shared, "result string").collect()
            ]
            results = _with_empty_slots(results, count)
        elif self.arrow:
            # The same partitions as `selected.rdd`, so the same task index for each row.
            write_arrow = functools.partial(write_arrow_task, config, batch_id)
            results = [
                json.loads(row[0])
                for row in selected.mapInArrow(write_arrow, "result string").collect()
            ]
        else:
            write = functools.partial(write_indexed_task, config, batch_id)
            results = selected.rdd.mapPartitionsWithIndex(write).collect()
        tasks = [TaskResult(**r) for r in results]
        report = SinkBatchReport.of(batch_id, tasks, time.monotonic() - started)
        self._reports.append(report)
        self._task_results.append(tasks)
        log.info(
            "kafka sink %s -> %s batch %d: %d of %d tasks written, %d skipped (committed "
            "before), %d empty; %d rows in %.2f s",
            self.sink_id,
            self.topic,
            batch_id,
            report.tasks_written,
            report.tasks,
            report.tasks_skipped,
            report.tasks_empty,
            report.rows_written,
            report.seconds,
        )
        maybe_crash(AFTER_SINK_COMMIT, batch_id)
        return report

    def _projected(
        self, batch: DataFrame, fields: Sequence[tuple[str, str]], columns: Sequence[str]
    ) -> DataFrame:
        """The batch narrowed to the sink's `columns`.

        `mapInArrow` tasks read their columns by name (`rows.arrow_rows`): a batch that
        has the sink's columns and no other goes to them as it is, without a projection (a
        py4j round trip per batch, on the driver, between two micro-batches). Pickled rows
        are read by position, so the RDD path always gets them in `columns` order.
        """
        names = sorted(name for name, _ in fields)
        if self.arrow and names == sorted(columns):
            return batch
        return batch.select(*columns)

    def _shared_tasks(self, selected: DataFrame, count: int) -> int | None:
        """How many Spark tasks write the batch's `count` slots when fewer than `count`; None
        when every slot gets a task of its own."""
        limit = self.max_tasks
        if limit is None:
            try:
                limit = int(selected.sparkSession.sparkContext.defaultParallelism)
            except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: no sharing
                return None
        return limit if 0 < limit < count else None

    def _with_slots(
        self, selected: DataFrame, columns: Sequence[str], batch_id: int
    ) -> tuple[DataFrame, list[int] | None, int]:
        """The rows to write, the slot of each task index (None: the index itself) and the
        number of tasks (slots).

        See `slots`: a task's slot, not its index, names its transactional id and
        marker, because only the slot is the same on a replay of the batch.
        """
        slots = task_slots(selected)
        if slots is not None:
            return selected, slots, len(slots)
        hashed = [name for name in ("key", "value", "partition") if name in columns]
        count = max(1, selected.rdd.getNumPartitions())
        log.info(
            "exactly-once sink %s batch %d: the batch's lineage does not fix which rows a "
            "task gets; hash-partitioning it on %s into %d tasks",
            self.sink_id,
            batch_id,
            ", ".join(hashed),
            count,
        )
        return selected.repartition(count, *hashed), None, count


def _with_empty_slots(results: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """The results of shared tasks, which report only the slots that had rows, with an empty
    result for each of the other slots of `count` (a failed slot fails its task instead)."""
    reported = {int(r["task"]) for r in results}
    empty = [
        asdict(TaskResult(slot, STATUS_EMPTY, 0, 0.0))
        for slot in range(count)
        if slot not in reported
    ]
    return sorted([*results, *empty], key=lambda r: int(r["task"]))


def _pyarrow_importable() -> bool:
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None
