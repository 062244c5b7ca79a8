"""An exactly-once Kafka sink for Spark Structured Streaming, used through `foreachBatch`.

    sink = ExactlyOnceKafkaSink(
        producer_config={"bootstrap.servers": "broker:9092"},
        topic="out",
        sink_id="orders-enriched",
        query_id="<the query's id, stable across restarts>",
    )
    query = df.writeStream.foreachBatch(sink).option("checkpointLocation", ckpt).start()

Spark's own Kafka sink is at-least-once: a batch replayed after a crash is written again.
This sink ties each Kafka transaction to (micro-batch N, output slot p), and remembers in
Kafka which of them committed. A slot is a task of the batch named so that a replay of the
batch gives it the same rows (`sink_slots`: Spark's task index does not; the Kafka source
numbers a replayed batch's ranges in another order about one time in three):

- transactional.id `<sink id>-<p>`. `init_transactions()` fences a zombie producer with the
  same id (a task of a crashed driver, an earlier attempt of this task) and aborts its open
  transaction.
- marker group `<sink id>.<query id>.p<p>`: a consumer group that never consumes. Its
  committed offset on the marker topic-partition is "last committed batch + 1". If it is
  already > N, task p of batch N committed before (a replay after a crash between the Kafka
  commit and Spark's commit log): the task writes nothing.
- otherwise: begin, `send_offsets_to_transaction` with offset N + 1 for the marker group,
  produce the task's rows, commit. Data and marker become visible atomically. (The marker
  goes in first so that a reused producer finds out it was fenced before it has consumed
  the task's rows: see "Client reuse".)

Requirements the caller must meet:

- Deterministic rows per batch: when Spark replays batch N (same offsets, from the
  checkpoint's `offsets/N`), the batch must hold the same rows. Kafka ranges, projections,
  filters, aggregations and shuffles are deterministic; `rand()`, `current_timestamp()` or a
  join against data that changes between attempts are not. A slot whose rows differ on
  replay is still written at most once, but with the rows of its first committed attempt.
  Which task gets which rows is the sink's business (see `sink_slots`): rows straight from
  Kafka ranges or from a shuffle keep their tasks; for other lineages the sink
  hash-partitions the batch on its columns first.
- `query_id` must be stable across restarts of the query (the checkpoint's query id, which is
  `StreamingQuery.id`, or any fixed pipeline name): a new query id means new marker groups,
  and the replay of the last batch would be written again.
- Readers must use `isolation.level=read_committed`. A read_uncommitted reader sees aborted
  and in-flight records too, which is exactly what exactly-once excludes.
- `sink_id` must be unique on the Kafka cluster and used by one live query at a time: it
  names the transactional ids, so two writers sharing it fence each other's producers.
- The package must be importable on executors, with confluent_kafka and (unless
  `arrow=False`) pyarrow (they are, in local mode; on a cluster install them in the
  executors' environment, or ship the package with `--py-files` to executors that have
  both).
- Spark retries a failed task only if `spark.task.maxFailures` > 1 (`local[2]` means 1; use
  `local[2,4]` to get retries in local mode). A retried task fences its failed attempt.

The marker topic-partition is partition 0 of the sink topic itself. Kafka brokers refuse
offset commits for topics that do not exist, and partition 0 is the one partition every
topic has, so no extra topic has to be created, granted or kept. Marker offsets are batch
numbers, not positions: lag tools will show the marker groups with a meaningless lag on
partition 0; filter groups named `<sink id>.` out of lag alerts. Reading a marker with
`isolation.level=read_committed` makes the broker answer only once no transactional offset
commit is pending for the group (KIP-447), and the read happens after the task's producer
ran `init_transactions()` (a reused one when it was created: see "Client reuse"), which
aborted every older zombie of this task.

A task with no rows opens no transaction and moves no marker, but still makes sure its
worker holds a producer that called `init_transactions()`: it creates one unless one is
cached, so the first run of a task after a crash aborts the open transaction of a zombie
with the same transactional id even when the task has no rows. (A zombie newer than a
cached producer, which only a worker dying mid-task within the same application leaves,
is aborted by the next task of that index that has rows, or by its transaction timeout.)

Client reuse. Creating a transactional producer and running `init_transactions()` (and a
marker consumer finding its group coordinator) costs a few round trips to the cluster, far
more than writing a micro-batch task's rows. So each Python worker keeps its producers and
marker consumers between tasks (Spark reuses Python workers: `spark.python.worker.reuse`,
true by default), keyed by transactional.id / marker group and a digest of their settings;
a task takes them out while it runs and puts them back only if it succeeded. What keeps
this exactly-once:

- A cached producer called `init_transactions()` when it was created, which fenced every
  older producer with its id. It can only be fenced since by a newer one: a task of the
  same index run by another worker, or a restarted job. The marker is therefore still read
  fresh in every task (committed offsets, read_committed), never remembered: the newer
  producer may have committed this very batch.
- The transaction is opened with the marker first (`send_offsets_to_transaction`, which the
  coordinator refuses to a fenced producer) and only then are rows consumed and produced.
  A reused producer that fails up to there (fenced, expired id, coordinator trouble) is
  closed (its consumer too if the marker read failed) and the task starts over with a new
  producer (`init_transactions()` fences and aborts whatever the newer one left open) and
  reads the marker again: it may now say the batch was committed. Only the first row has
  been consumed by then, and it is kept, so the rows need not be held in memory for this.
  An error after that point is handled exactly as with a new producer (the task fails; an
  abortable error aborts).
- A marker read through reused clients that takes longer than REUSED_MARKER_TIMEOUT_S (a
  pending transactional offset commit of a newer, maybe dead, producer) is such a failure.
- A client that saw any error is closed, never cached; a cached producer has no open
  transaction. A forked process never uses clients cached by its parent.

A cost, not a risk: when task p moves to another worker, that worker creates a producer for
p, which fences the one the first worker keeps; when p comes back there, the fenced one is
replaced. Each move costs one producer creation, as every task did without reuse. Spark
hands tasks to idle Python workers first-in first-out, so in local mode tasks move often.

Other costs kept down. A new client first connects to a `bootstrap.servers` address and
librdkafka (2.10+) drops that connection once it knows the brokers, losing a coordinator
query sent on it; init_transactions() then retried only after a fixed 500 ms. A new
producer therefore first waits (a few ms) until a named broker answers a metadata request,
a new marker consumer is created before the producer so that it finds its coordinator
meanwhile, and both get `reconnect.backoff.ms` 20 unless configured (see
_RECONNECT_BACKOFF_MS). Rows reach the Python workers as Arrow batches (`arrow`), not as
pickled Row objects.

Rows: the batch needs a `value` column (string or binary, null for a tombstone) and may have
`key` (string, binary or null), `partition` (an integer type; the producer's partitioner
chooses when null or absent) and `headers` (array<struct<key:string,value:binary>>), as in
Spark's Kafka sink. Other columns are ignored. A `topic` column is refused: this sink writes
to one topic, the one its markers live on.

confluent_kafka and pyspark are imported inside functions only: importing this module must
stay cheap (DAG files import the package), and executors import confluent_kafka themselves.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from airflow_provider_kafkaspark.errors import InvalidInputError, KafkaRequestError
from airflow_provider_kafkaspark.spark.fault_points import (
    AFTER_SINK_COMMIT,
    DURING_SINK_WRITE,
    maybe_crash,
    should_crash,
)
from airflow_provider_kafkaspark.spark.sink_slots import task_slots

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Producer
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)

T = TypeVar("T")

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

# Partition of the sink topic whose consumer-group offsets hold the markers (see docstring).
MARKER_PARTITION = 0

# How many transactional producers (and as many marker consumers) one Python worker keeps
# between tasks (see "Client reuse"), least recently used closed first. Each is a librdkafka
# client with its own threads and broker connections; a worker needs one per output task it
# runs (tasks of all sinks in the application).
MAX_CACHED_PRODUCERS = 64

# Seconds a marker read through reused clients may take before the task gives them up and
# starts over with new ones. The read waits only while a transactional offset commit for
# the marker group is pending, and a reused producer has no open transaction: a pending
# commit belongs to a newer producer with the same transactional.id (which has fenced the
# reused one), possibly dead. A new producer aborts it at once instead of waiting for it to
# time out. A healthy read takes milliseconds.
REUSED_MARKER_TIMEOUT_S = 5.0

# Seconds a new producer may wait for a connection to a broker before init_transactions()
# (see _await_broker); init_transactions() then waits for the rest of its own timeout.
_CONNECT_WAIT_S = 5.0

# reconnect.backoff.ms of the sink's producers and marker consumers unless configured.
# librdkafka opens connections to newly learned brokers no sooner than half of it after the
# client's first connection (100 ms by default, so 50 ms), and a new client connects first
# to a bootstrap address, which it drops once it knows the brokers: every new client waited
# those 50 ms before its first real request. At 20 ms the wait is librdkafka's floor of
# 11 ms; reconnects after a failure still back off exponentially up to
# reconnect.backoff.max.ms (10 s by default).
_RECONNECT_BACKOFF_MS = 20

# Settings the marker consumer takes over from producer_config: how to reach and log in to
# the cluster. Producer-only settings (acks, linger.ms, ...) would only make librdkafka warn.
_CONNECTION_KEYS = (
    "bootstrap.servers",
    "security.protocol",
    "client.id",
    "client.dns.lookup",
    "client.rack",
    "broker.address.family",
    "socket.",
    "sasl.",
    "ssl.",
    "ssl_",
    "enable.ssl.certificate.verification",
    "oauthbearer",
    "https.",
    "metadata.max.age.ms",
    "topic.metadata.",
    "reconnect.",
    "connections.max.idle.ms",
    "api.version",
    "broker.version.fallback",
)

# Settings the sink owns: they make the protocol work and must not be overridden.
_OWNED_PRODUCER_KEYS = ("transactional.id", "transaction.timeout.ms")
_OWNED_CONSUMER_KEYS = ("group.id", "enable.auto.commit", "isolation.level")

_NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")

_TEXT_TYPES = ("string", "binary")
_INT_TYPES = ("tinyint", "smallint", "int", "bigint")
_HEADERS_TYPE = "array<struct<key:string,value:binary>>"

STATUS_WRITTEN = "written"
STATUS_SKIPPED = "skipped"
STATUS_EMPTY = "empty"

# How a task got its transactional producer (TaskResult.producer).
PRODUCER_CREATED = "created"  # none cached in this worker: created, init_transactions()
PRODUCER_REUSED = "reused"  # cached in this worker by an earlier task with the same id
PRODUCER_REPLACED = "replaced"  # the cached one failed before writing: created anew


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


def sink_columns(fields: Sequence[tuple[str, str]]) -> list[str]:
    """The columns to send to the tasks, `value` first, from (name, Spark type) pairs.

    Types are Spark's `DataType.simpleString()` names. Raises InvalidInputError naming the
    missing or bad column.
    """
    types = {name: type_name for name, type_name in fields}
    if "value" not in types:
        hint = ""
        near = [n for n in types if n.lower() == "value"]
        if near:
            hint = f" (found {near[0]!r}; column names are case-sensitive here)"
        raise InvalidInputError(
            "the batch DataFrame has no `value` column: the Kafka sink needs `value` "
            f"(string or binary){hint}; columns are {sorted(types) or 'none'}"
        )
    if types["value"] not in _TEXT_TYPES:
        raise InvalidInputError(
            f"column `value` is {types['value']}, the Kafka sink needs string or binary: "
            "cast it, e.g. CAST(value AS STRING) or to_json(struct(*)) AS value"
        )
    columns = ["value"]
    if "key" in types:
        if types["key"] not in (*_TEXT_TYPES, "void"):
            raise InvalidInputError(
                f"column `key` is {types['key']}, the Kafka sink needs string, binary or null"
            )
        columns.append("key")
    if "partition" in types:
        if types["partition"] not in _INT_TYPES:
            raise InvalidInputError(
                f"column `partition` is {types['partition']}, the Kafka sink needs an integer"
            )
        columns.append("partition")
    if "headers" in types:
        if types["headers"] != _HEADERS_TYPE:
            raise InvalidInputError(
                f"column `headers` is {types['headers']}, the Kafka sink needs {_HEADERS_TYPE}"
            )
        columns.append("headers")
    if "topic" in types:
        raise InvalidInputError(
            "column `topic` is not supported: the exactly-once sink writes only to its "
            "configured topic; drop the column or use one sink per topic"
        )
    return columns


def _check_name(what: str, value: str) -> str:
    if not isinstance(value, str) or not _NAME_RE.match(value):
        raise InvalidInputError(
            f"{what} {value!r} must be a non-empty string of letters, digits, '.', '_' or '-'"
        )
    return value


def _plain_config(what: str, config: Mapping[str, Any], owned: Sequence[str]) -> dict[str, Any]:
    """A copy of `config` that pickles and names no setting the sink owns.

    Messages name keys, never values: configs may hold passwords.
    """
    plain: dict[str, Any] = {}
    for key, value in config.items():
        if not isinstance(key, str):
            raise InvalidInputError(f"{what}: setting names must be strings, got {key!r}")
        if key in owned:
            raise InvalidInputError(
                f"{what}: `{key}` is set by the exactly-once sink itself; remove it "
                "(transaction.timeout.ms is the sink's transaction_timeout_ms argument)"
            )
        if not isinstance(value, str | int | float | bool):
            raise InvalidInputError(
                f"{what}: `{key}` must be a string, number or boolean (callbacks and "
                "objects cannot be shipped to executors)"
            )
        plain[key] = value
    return plain


def connection_settings(producer_config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of `producer_config` that say how to reach and log in to the cluster."""
    return {k: v for k, v in producer_config.items() if k.startswith(_CONNECTION_KEYS)}


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
    """A `foreachBatch` function that writes each batch to Kafka exactly once (see module)."""

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
    ) -> None:
        """`consumer_config`: settings of the consumer that reads and commits the markers;
        by default the connection and security settings of `producer_config`.

        `reuse_clients`: keep producers and marker consumers in the Python workers between
        batches (see "Client reuse" in the module docstring); False creates and closes them
        in every task.

        `arrow`: hand the rows to the tasks as Arrow record batches (`mapInArrow`), which
        costs far less than Spark's pickled Row objects; it needs pyarrow on the driver and
        the executors (pyspark's SQL extras; this package's pyspark-client brings it). False
        uses `rdd.mapPartitionsWithIndex`. Both give every row the same task index. By
        default: Arrow if pyarrow is importable here."""
        self.topic = _check_name("topic", topic)
        self.sink_id = _check_name("sink_id", sink_id)
        self.query_id = _check_name("query_id", query_id)
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
        self._producer_config = _plain_config(
            "producer_config", producer_config, _OWNED_PRODUCER_KEYS
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
            self._consumer_config = _plain_config(
                "consumer_config", consumer_config, _OWNED_CONSUMER_KEYS
            )
        self.reuse_clients = bool(reuse_clients)
        self.arrow = _pyarrow_importable() if arrow is None else bool(arrow)
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

    def task_config(self, columns: Sequence[str]) -> dict[str, Any]:
        """Everything a task needs, as plain data: this is what gets pickled to executors."""
        return {
            "producer_config": {
                **self._producer_config,
                "enable.idempotence": True,
                "transaction.timeout.ms": self.transaction_timeout_ms,
            },
            "consumer_config": dict(self._consumer_config),
            "topic": self.topic,
            "sink_id": self.sink_id,
            "query_id": self.query_id,
            "columns": list(columns),
            "operation_timeout_s": self.operation_timeout_s,
            "reuse_clients": self.reuse_clients,
            "driver_pid": os.getpid(),
        }

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.write_batch(batch, batch_id)

    def write_batch(self, batch: DataFrame, batch_id: int) -> SinkBatchReport:
        """Write one micro-batch; returns (and keeps) its report. Raises if any task failed."""
        if isinstance(batch_id, bool) or not isinstance(batch_id, int) or batch_id < 0:
            raise InvalidInputError(f"batch_id must be a non-negative integer, got {batch_id!r}")
        fields = [(f.name, f.dataType.simpleString()) for f in batch.schema.fields]
        columns = sink_columns(fields)
        config = self.task_config(columns)
        started = time.monotonic()
        selected, config["slots"] = self._with_slots(batch.select(*columns), columns, batch_id)
        if self.arrow:
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

    def _with_slots(
        self, selected: DataFrame, columns: Sequence[str], batch_id: int
    ) -> tuple[DataFrame, list[int] | None]:
        """The rows to write and the slot of each task index (None: the index itself).

        See `sink_slots`: a task's slot, not its index, names its transactional id and
        marker, because only the slot is the same on a replay of the batch.
        """
        slots = task_slots(selected)
        if slots is not None:
            return selected, slots
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
        return selected.repartition(count, *hashed), None


def _pyarrow_importable() -> bool:
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


# -- executor side ------------------------------------------------------------------------


def _as_bytes(value: Any) -> bytes | str | None:
    # pyspark gives binary columns as bytearray; librdkafka wants bytes (or str).
    if value is None or isinstance(value, bytes | str):
        return value
    return bytes(value)


def _task_error(
    config: Mapping[str, Any], batch_id: int, task: int, step: str, exc: object
) -> KafkaRequestError:
    return KafkaRequestError(
        f"exactly-once sink {config['sink_id']} -> {config['topic']}: task {task} of batch "
        f"{batch_id} (transactional.id {transactional_id(config['sink_id'], task)}): "
        f"{step} failed: {exc}"
    )


def _kafka_error_of(exc: BaseException) -> Any:
    args = getattr(exc, "args", ())
    return args[0] if args and hasattr(args[0], "txn_requires_abort") else None


# Error codes worth another try within the operation timeout, even when librdkafka does not
# flag them retriable: a group coordinator that moves or is still loading (the first group
# on a fresh cluster creates __consumer_offsets), a pending transactional offset commit.
_RETRY_CODES = frozenset(
    {
        7,  # REQUEST_TIMED_OUT
        14,  # COORDINATOR_LOAD_IN_PROGRESS
        15,  # COORDINATOR_NOT_AVAILABLE
        16,  # NOT_COORDINATOR
        51,  # CONCURRENT_TRANSACTIONS
        88,  # UNSTABLE_OFFSET_COMMIT
        -185,  # _TIMED_OUT
        -180,  # _WAIT_COORD
        -195,  # _TRANSPORT
    }
)


def retry_worthy(error: Any) -> bool:
    """True for a KafkaError that another try of the same call may get past."""
    if error is None or error.fatal() or error.txn_requires_abort():
        return False
    return bool(error.retriable()) or error.code() in _RETRY_CODES


def _retrying(call: Callable[[], T], timeout_s: float) -> T:
    """`call()`, tried again on retry-worthy Kafka errors until `timeout_s` has passed.

    librdkafka documents send_offsets_to_transaction and commit_transaction as safe to call
    again after a retriable error; a committed-offsets read is a plain read.
    """
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout_s
    pause = 0.1
    while True:
        try:
            return call()
        except KafkaException as exc:
            if not retry_worthy(_kafka_error_of(exc)) or time.monotonic() + pause > deadline:
                raise
            log.info("retrying after a retriable Kafka error: %s", exc)
            time.sleep(pause)
            pause = min(pause * 2, 2.0)


def _read_marker(
    consumer: Consumer, config: Mapping[str, Any], batch_id: int, task: int, timeout: float
) -> tuple[int, Any]:
    """The marker group's committed offset (-1001 if none) and its group metadata.

    Always a request to the group coordinator (librdkafka keeps no committed offsets on the
    client side), with `isolation.level=read_committed`: only stable offsets, so the read
    waits while a transactional offset commit for the group is pending.
    """
    from confluent_kafka import KafkaException, TopicPartition

    marker_tp = TopicPartition(config["topic"], MARKER_PARTITION)
    try:
        committed = _retrying(lambda: consumer.committed([marker_tp], timeout)[0], timeout)
    except KafkaException as exc:
        raise _task_error(config, batch_id, task, "reading the marker", exc) from exc
    if committed.error is not None:
        raise _task_error(config, batch_id, task, "reading the marker", committed.error)
    # Generation -1 and no member id: a group that never joins, which is what we want.
    return int(committed.offset), consumer.consumer_group_metadata()


def _new_marker_consumer(config: Mapping[str, Any], task: int) -> Consumer:
    from confluent_kafka import Consumer

    return Consumer(
        {
            "reconnect.backoff.ms": _RECONNECT_BACKOFF_MS,
            **config["consumer_config"],
            "group.id": marker_group(config["sink_id"], config["query_id"], task),
            "enable.auto.commit": False,
            # Only stable offsets: wait while a transactional offset commit is pending.
            "isolation.level": "read_committed",
        }
    )


def _new_producer(config: Mapping[str, Any], batch_id: int, task: int, clock: _Clock) -> Producer:
    """A transactional producer for task `task` that has fenced every older one."""
    from confluent_kafka import KafkaException, Producer

    txn_id = transactional_id(config["sink_id"], task)
    producer = Producer(
        {
            "reconnect.backoff.ms": _RECONNECT_BACKOFF_MS,
            "logger": ProducerLog(txn_id),
            **config["producer_config"],
            "transactional.id": txn_id,
        }
    )
    clock.lap("create")
    _await_broker(producer, config["topic"], config["operation_timeout_s"])
    clock.lap("connect")
    try:
        # Fences any producer with this id and aborts its open transaction.
        producer.init_transactions(config["operation_timeout_s"])
    except KafkaException as exc:
        _close_quietly(producer)
        raise _task_error(config, batch_id, task, "init_transactions", exc) from exc
    clock.lap("init_transactions")
    return producer


def _await_broker(producer: Producer, topic: str, timeout: float) -> None:
    """Return once the producer has a connection to a broker it learned from the cluster.

    librdkafka (2.10 and later) drops its connections to the `bootstrap.servers` addresses
    once the first metadata response names the brokers. A transaction-coordinator query
    that init_transactions() sent on such a connection is lost with it, and librdkafka asks
    again only after a fixed 500 ms: about half of all init_transactions() calls took 0.5 s
    instead of a few ms on the local cluster. A metadata request answered by a named broker
    (not a bootstrap address) means that broker is connected, so the coordinator query goes
    there at once. The producer needs the topic's metadata anyway. Errors are left to
    init_transactions() to report, and this waits a few seconds at most.
    """
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + min(timeout, _CONNECT_WAIT_S)
    for _ in range(3):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        try:
            metadata = producer.list_topics(topic, remaining)
        except KafkaException:
            return
        if metadata.orig_broker_id >= 0:
            return


def _open_transaction(
    producer: Producer, config: Mapping[str, Any], batch_id: int, task: int, group_metadata: Any
) -> None:
    """Begin a transaction and put the marker (batch + 1) into it, before any row.

    Sending the marker first is what lets a reused producer prove, before the task has
    consumed its rows, that no newer producer with its transactional.id exists: the
    transaction coordinator checks the producer's epoch on this request (AddOffsetsToTxn)
    and answers a fenced producer with a fatal error. The order inside a transaction changes
    nothing else: data and marker still become visible together at the commit, or never.
    """
    from confluent_kafka import KafkaException, TopicPartition

    timeout = config["operation_timeout_s"]
    producer.begin_transaction()
    marker_tp = TopicPartition(config["topic"], MARKER_PARTITION, batch_id + 1)
    try:
        _retrying(
            lambda: producer.send_offsets_to_transaction([marker_tp], group_metadata, timeout),
            timeout,
        )
    except KafkaException as exc:
        error = _kafka_error_of(exc)
        if error is not None and error.txn_requires_abort():
            _abort_quietly(producer, timeout)
        step = "send_offsets_to_transaction (marker)"
        raise _task_error(config, batch_id, task, step, exc) from exc


def _produce_rows(
    producer: Producer,
    config: Mapping[str, Any],
    rows: Iterable[Any],
    crash_batch: int | None,
) -> int:
    """Produce every row into the open transaction; returns how many."""
    topic = config["topic"]
    columns = config["columns"]
    key_at = columns.index("key") if "key" in columns else None
    partition_at = columns.index("partition") if "partition" in columns else None
    headers_at = columns.index("headers") if "headers" in columns else None
    crash_after = None
    if crash_batch is not None:
        rows = list(rows)
        crash_after = max(1, len(rows) // 2)
    count = 0
    for row in rows:
        kwargs: dict[str, Any] = {"value": _as_bytes(row[0])}
        if key_at is not None:
            kwargs["key"] = _as_bytes(row[key_at])
        if partition_at is not None and row[partition_at] is not None:
            kwargs["partition"] = int(row[partition_at])
        if headers_at is not None and row[headers_at] is not None:
            kwargs["headers"] = [(h[0], _as_bytes(h[1])) for h in row[headers_at]]
        while True:
            try:
                producer.produce(topic, **kwargs)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
        count += 1
        if count == crash_after and crash_batch is not None:
            # The first half is in the broker's log, inside the open transaction.
            producer.flush(config["operation_timeout_s"])
            maybe_crash(DURING_SINK_WRITE, crash_batch, driver_pid=config["driver_pid"])
    return count


def _abort_quietly(producer: Producer, timeout: float) -> None:
    from confluent_kafka import KafkaException

    try:
        producer.abort_transaction(timeout)
    except KafkaException as abort_exc:  # the original error is the one to report
        log.warning("abort_transaction failed after an error: %s", abort_exc)


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


def _slot(config: Mapping[str, Any], index: int) -> int:
    slots = config.get("slots")
    return index if slots is None else int(slots[index])


def write_indexed_task(
    config: Mapping[str, Any], batch_id: int, index: int, rows: Iterable[Any]
) -> Iterator[dict[str, Any]]:
    """`write_task` for the task with partition index `index` (`mapPartitionsWithIndex`)."""
    return write_task(config, batch_id, _slot(config, index), rows)


def write_task(
    config: Mapping[str, Any], batch_id: int, task: int, rows: Iterable[Any]
) -> Iterator[dict[str, Any]]:
    """Executor side: write task `task` of batch `batch_id` in one transaction, or skip it.

    Yields one TaskResult as a dict. Raises (never swallows) when Kafka refuses, so that
    Spark fails the task; abortable errors abort the transaction first. A reused producer
    (see "Client reuse" in the module docstring) that fails before the task has produced
    anything is replaced by a new one within the task, which starts the protocol over.
    """
    yield _write_task(config, batch_id, task, iter(rows))


def write_arrow_task(
    config: Mapping[str, Any], batch_id: int, batches: Iterable[Any]
) -> Iterator[Any]:
    """Executor side, for `mapInArrow`: `write_task` for this task's Arrow record batches.

    The task is the slot of the partition index (see `sink_slots`). Yields one record batch
    with one row: the TaskResult as JSON, in column `result`.
    """
    import pyarrow as pa
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise RuntimeError("write_arrow_task runs only inside a Spark task")
    task = _slot(config, context.partitionId())
    result = _write_task(config, batch_id, task, _arrow_rows(batches, config))
    yield pa.RecordBatch.from_arrays([pa.array([json.dumps(result)])], names=["result"])


def _arrow_rows(batches: Iterable[Any], config: Mapping[str, Any]) -> Iterator[tuple[Any, ...]]:
    """Row tuples in `columns` order, as the RDD path gives them (headers as pairs)."""
    columns = config["columns"]
    headers_at = columns.index("headers") if "headers" in columns else None
    for batch in batches:
        values = [batch.column(name).to_pylist() for name in columns]
        if headers_at is not None:
            values[headers_at] = [
                None if headers is None else [(h["key"], h["value"]) for h in headers]
                for headers in values[headers_at]
            ]
        yield from zip(*values, strict=True)


def _write_task(
    config: Mapping[str, Any], batch_id: int, task: int, rows: Iterator[Any]
) -> dict[str, Any]:
    from confluent_kafka import KafkaException

    clock = _Clock()
    timeout = config["operation_timeout_s"]
    reuse = bool(config.get("reuse_clients", True))
    txn_id = transactional_id(config["sink_id"], task)
    group = marker_group(config["sink_id"], config["query_id"], task)
    producer_key = _fingerprint(config["producer_config"])
    consumer_key = _fingerprint(config["consumer_config"])
    producer: Producer | None = None
    consumer: Consumer | None = None
    if reuse:
        producer, consumer = _CLIENTS.take(txn_id, producer_key, group, consumer_key)
    origin = PRODUCER_REUSED if producer is not None else PRODUCER_CREATED
    # Only this first row is read before the transaction is open, and it is kept: whatever
    # happens to a reused producer before then, the task can start over with all its rows.
    first = next(rows, None)
    clock.lap("first_row")
    count = 0
    keep = False
    try:
        while True:
            reused = producer is not None
            if consumer is None and first is not None:
                # Created before the producer: it finds its group coordinator in the
                # background while the producer connects and fences, so the marker read
                # after that does not wait for it.
                consumer = _new_marker_consumer(config, task)
                clock.lap("create")
            if producer is None:
                producer = _new_producer(config, batch_id, task, clock)
            step = "marker"
            try:
                if first is None:
                    status = STATUS_EMPTY
                    break
                assert consumer is not None  # made above for a task with rows
                # Read fresh for every batch: another producer with this transactional.id
                # (another worker, a restarted job) may have committed this batch.
                marker, group_metadata = _read_marker(
                    consumer,
                    config,
                    batch_id,
                    task,
                    min(timeout, REUSED_MARKER_TIMEOUT_S) if reused else timeout,
                )
                clock.lap("marker")
                if already_committed(marker, batch_id):
                    status = STATUS_SKIPPED
                    break
                step = "transaction"
                _open_transaction(producer, config, batch_id, task, group_metadata)
                clock.lap("send_offsets")
                status = STATUS_WRITTEN
                break
            except (KafkaException, KafkaRequestError) as exc:
                if not reused:
                    raise
                # Fenced by a newer producer with the same transactional.id, expired, or
                # left in a bad state: never reuse it. Nothing of this task was produced
                # yet; a new producer fences every other one and aborts what they left
                # open, and the marker is read again after that.
                log.info(
                    "exactly-once sink %s: task %d of batch %d: the reused producer for "
                    "transactional.id %s failed before writing (%s); replacing it",
                    config["sink_id"],
                    task,
                    batch_id,
                    txn_id,
                    exc,
                )
                _close_quietly(producer)
                producer = None
                if step == "marker" and consumer is not None:
                    # The read itself failed: a new consumer too. After a refused marker
                    # the consumer is fine, and already knows its coordinator.
                    _close_quietly(consumer)
                    consumer = None
                origin = PRODUCER_REPLACED
                clock.lap("replace")
        if status == STATUS_WRITTEN:
            count = _write_rows(producer, config, batch_id, task, first, rows, clock)
        keep = reuse
    finally:
        if keep and producer is not None:
            _CLIENTS.put(txn_id, producer_key, producer, group, consumer_key, consumer)
        else:
            for client in (producer, consumer):
                if client is not None:
                    _close_quietly(client)
            clock.lap("close")
    result = TaskResult(
        task, status, count, clock.seconds(), dict(clock.phases), origin, os.getpid()
    )
    return asdict(result)


def _write_rows(
    producer: Producer,
    config: Mapping[str, Any],
    batch_id: int,
    task: int,
    first: Any,
    rest: Iterator[Any],
    clock: _Clock,
) -> int:
    """Produce the task's rows into the open transaction and commit it; returns how many."""
    from confluent_kafka import KafkaException

    timeout = config["operation_timeout_s"]
    armed = task == 0 and should_crash(os.environ, DURING_SINK_WRITE, batch_id)
    crash_batch = batch_id if armed else None
    step = "producing rows"
    try:
        count = _produce_rows(producer, config, _chain(first, rest), crash_batch)
        clock.lap("produce")
        step = "commit_transaction"
        _retrying(lambda: producer.commit_transaction(timeout), timeout)
        clock.lap("commit")
    except KafkaException as exc:
        error = _kafka_error_of(exc)
        if error is not None and error.txn_requires_abort():
            _abort_quietly(producer, timeout)
        # Fatal (fenced, ...) or retriable (a commit that timed out): no abort. The next
        # attempt's init_transactions finishes or aborts whatever is in flight, and the
        # marker then tells it whether to write.
        raise _task_error(config, batch_id, task, step, exc) from exc
    except Exception:
        _abort_quietly(producer, timeout)
        raise
    return count


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


class ProducerLog:
    """librdkafka's log lines of one sink producer, through Python logging (confluent-kafka
    calls `log(level, fmt, *args)`).

    A cached producer fenced by a newer one with its transactional.id (a task retried
    elsewhere, a restarted query) is how this sink recovers, not a failure: librdkafka logs
    that at FATAL level, which would page whoever greps a healthy job's log. It is logged
    once per producer at INFO here; every other line keeps librdkafka's level.
    """

    def __init__(self, transactional_id: str) -> None:
        self.transactional_id = transactional_id
        self.fenced_logged = False

    def log(self, level: int, fmt: str, *args: object) -> None:
        text = fmt % args if args else fmt
        if "fenced" in text.lower():
            if not self.fenced_logged:
                self.fenced_logged = True
                log.info(
                    "producer %s was fenced by a newer one with its transactional.id "
                    "(expected: the sink replaces it): %s",
                    self.transactional_id,
                    text,
                )
            return
        log.log(level, "librdkafka: %s", text)


def _close_quietly(client: Producer | Consumer) -> None:
    try:
        client.close()
    except Exception as exc:  # noqa: BLE001 - closing must not hide the task's own error
        # A fenced producer, replaced on purpose, refuses to close with the fencing error.
        level = logging.INFO if "fenced" in str(exc).lower() else logging.WARNING
        log.log(level, "closing a Kafka client of the exactly-once sink failed: %s", exc)


# -- executor side: clients kept between tasks ------------------------------------------


def _fingerprint(settings: Mapping[str, Any]) -> str:
    """A digest of a client config: a cached client is reused only under the same settings.

    A digest, not the settings themselves, so that the cache keys hold no password.
    """
    text = json.dumps(sorted(settings.items()), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class _ClientCache:
    """The transactional producers and marker consumers one Python worker keeps between tasks.

    A client is taken out while a task uses it and put back only after the task succeeded,
    so no two tasks share one and a client that saw an error is never used again. Producers
    are keyed by transactional.id: one process never holds two producers with the same id,
    which would only fence each other. At most `limit` of each are kept (least recently used
    go first, closed).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._producers: OrderedDict[str, tuple[str, Producer]] = OrderedDict()
        self._consumers: OrderedDict[tuple[str, str], Consumer] = OrderedDict()
        self._inherited: list[Any] = []

    def _check_process(self) -> None:
        # A forked child inherits the objects but not librdkafka's threads: it must neither
        # use nor destroy them (destroying waits on those threads). Keep them referenced,
        # unused, and start empty.
        if self._pid != os.getpid():
            self._inherited.extend(p for _, p in self._producers.values())
            self._inherited.extend(self._consumers.values())
            self._producers.clear()
            self._consumers.clear()
            self._pid = os.getpid()

    def take(
        self, txn_id: str, producer_key: str, group: str, consumer_key: str
    ) -> tuple[Producer | None, Consumer | None]:
        """The cached producer for `txn_id` and consumer for `group`, removed from the cache."""
        stale: list[Any] = []
        producer = None
        with self._lock:
            self._check_process()
            entry = self._producers.pop(txn_id, None)
            if entry is not None:
                if entry[0] == producer_key:
                    producer = entry[1]
                else:
                    stale.append(entry[1])
            consumer = self._consumers.pop((group, consumer_key), None)
        for client in stale:
            _close_quietly(client)
        return producer, consumer

    def put(
        self,
        txn_id: str,
        producer_key: str,
        producer: Producer,
        group: str,
        consumer_key: str,
        consumer: Consumer | None,
    ) -> None:
        """Keep a producer (ready: no open transaction) and its marker consumer for later."""
        evicted: list[Any] = []
        with self._lock:
            self._check_process()
            old = self._producers.pop(txn_id, None)
            if old is not None:
                evicted.append(old[1])
            self._producers[txn_id] = (producer_key, producer)
            if consumer is not None:
                old_consumer = self._consumers.pop((group, consumer_key), None)
                if old_consumer is not None:
                    evicted.append(old_consumer)
                self._consumers[(group, consumer_key)] = consumer
            while len(self._producers) > self.limit:
                evicted.append(self._producers.popitem(last=False)[1][1])
            while len(self._consumers) > self.limit:
                evicted.append(self._consumers.popitem(last=False)[1])
        for client in evicted:
            _close_quietly(client)

    def clear(self) -> int:
        """Close every cached client; returns how many there were."""
        with self._lock:
            self._check_process()
            clients: list[Any] = [p for _, p in self._producers.values()]
            clients.extend(self._consumers.values())
            self._producers.clear()
            self._consumers.clear()
        for client in clients:
            _close_quietly(client)
        return len(clients)

    def sizes(self) -> tuple[int, int]:
        """(producers, consumers) cached in this process."""
        with self._lock:
            self._check_process()
            return len(self._producers), len(self._consumers)


_CLIENTS = _ClientCache(MAX_CACHED_PRODUCERS)


def close_cached_clients() -> int:
    """Close the producers and marker consumers this process keeps between tasks.

    Returns how many were closed. Never needed for correctness (a cached producer has no
    open transaction); for tests, or a long-lived process that stops writing.
    """
    return _CLIENTS.clear()
