"""Executor side: the Kafka clients of one exactly-once sink task, and the calls made on them.

After Kafka Streams' `StreamsProducer`: a `TaskProducer` owns an output task's
transactional producer and its marker consumer while the task runs, makes every call of the
protocol on them (create and `init_transactions()`, read the marker, open the transaction
with the marker first, send the rows, commit, abort), and turns every Kafka error into one
of two kinds, both `KafkaRequestError`s that name the task and the step that failed:

- `FencedOrRetriableError`: the producer was fenced by a newer one with its
  transactional.id (or its id expired), or the error is retriable. A new producer, whose
  `init_transactions()` fences every other one, may get through: the task may start over.
- `FatalProducerError`: anything else (a refused authorization, a bad setting, ...), which
  another try would most likely meet again.

Which error is which is `core/kafka/client`'s classification (`fenced_or_retriable`, and
`retry_worthy` for another try of the same call), shared with the rest of the package.

confluent_kafka is imported inside functions only: executors import it themselves.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from airflow_provider_kafkaspark.core.kafka.client import (
    fenced_or_retriable,
    kafka_error,
    retry_worthy,
)
from airflow_provider_kafkaspark.errors import KafkaRequestError
from airflow_provider_kafkaspark.spark.sink.clients import close_quietly
from airflow_provider_kafkaspark.spark.sink.config import (
    MARKER_PARTITION,
    SinkTaskConfig,
    marker_group,
    transactional_id,
)
from airflow_provider_kafkaspark.spark.sink.rows import positional, produce_arguments

if TYPE_CHECKING:
    from confluent_kafka import Consumer, KafkaError, Producer

# The sink's modules log under one name, the one its users configure.
log = logging.getLogger("airflow_provider_kafkaspark.spark.sink")

T = TypeVar("T")

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

# Rows produced between two polls for delivery reports (a full queue is polled at once).
POLL_EVERY = 1000


class TaskProducerError(KafkaRequestError):
    """A Kafka call of an exactly-once sink task failed (the message says which)."""


class FencedOrRetriableError(TaskProducerError):
    """Fenced, expired or retriable: a new producer for the task may get through."""


class FatalProducerError(TaskProducerError):
    """An error another try would meet again."""


def _no_lap(phase: str) -> None:
    """The default `lap`: phases are not timed."""


class TaskProducer:
    """The transactional producer and marker consumer of output task `task` of one batch.

    Either client may come from the worker's cache (`clients`) or be created here; the
    caller decides what becomes of them when the task ends (`close`, or back to the cache).
    `lap(phase)` is called as each timed phase ends (TaskResult.phases).
    """

    def __init__(
        self,
        config: SinkTaskConfig,
        batch_id: int,
        task: int,
        *,
        producer: Producer | None = None,
        consumer: Consumer | None = None,
        lap: Callable[[str], None] = _no_lap,
    ) -> None:
        self.config = config
        self.batch_id = batch_id
        self.task = task
        self.transactional_id = transactional_id(config.sink_id, task)
        self.group = marker_group(config.sink_id, config.query_id, task)
        self.producer = producer
        self.consumer = consumer
        self._lap = lap
        self._timeout = config.operation_timeout_s

    # -- clients -------------------------------------------------------------------------

    def ensure_consumer(self) -> None:
        """Create the marker consumer, unless the task has one."""
        if self.consumer is not None:
            return
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "reconnect.backoff.ms": _RECONNECT_BACKOFF_MS,
                **self.config.consumer_config,
                "group.id": self.group,
                "enable.auto.commit": False,
                # Only stable offsets: wait while a transactional offset commit is pending.
                "isolation.level": "read_committed",
            }
        )
        self._lap("create")

    def ensure_producer(self) -> None:
        """Create a transactional producer that has fenced every older one, unless the task
        has a producer."""
        if self.producer is not None:
            return
        from confluent_kafka import KafkaException, Producer

        producer = Producer(
            {
                "reconnect.backoff.ms": _RECONNECT_BACKOFF_MS,
                "logger": ProducerLog(self.transactional_id),
                **self.config.producer_config,
                "transactional.id": self.transactional_id,
            }
        )
        self._lap("create")
        _await_broker(producer, self.config.topic, self._timeout)
        self._lap("connect")
        try:
            # Fences any producer with this id and aborts its open transaction.
            producer.init_transactions(self._timeout)
        except KafkaException as exc:
            close_quietly(producer)
            raise self._failure("init_transactions", exc) from exc
        self._lap("init_transactions")
        self.producer = producer

    def drop_producer(self) -> None:
        """Close the producer: after an error it is never used again."""
        if self.producer is not None:
            close_quietly(self.producer)
            self.producer = None

    def drop_consumer(self) -> None:
        """Close the marker consumer: after an error it is never used again."""
        if self.consumer is not None:
            close_quietly(self.consumer)
            self.consumer = None

    def close(self) -> None:
        """Close both clients (those the task has)."""
        self.drop_producer()
        self.drop_consumer()

    # -- the protocol ----------------------------------------------------------------------

    def read_marker(self, timeout: float) -> tuple[int, Any]:
        """The marker group's committed offset (-1001 if none) and its group metadata.

        Always a request to the group coordinator (librdkafka keeps no committed offsets on
        the client side), with `isolation.level=read_committed`: only stable offsets, so the
        read waits while a transactional offset commit for the group is pending.
        """
        from confluent_kafka import KafkaException, TopicPartition

        consumer = self.consumer
        assert consumer is not None, "ensure_consumer() first"
        step = "reading the marker"
        marker_tp = TopicPartition(self.config.topic, MARKER_PARTITION)
        try:
            committed = _retrying(lambda: consumer.committed([marker_tp], timeout)[0], timeout)
        except KafkaException as exc:
            raise self._failure(step, exc) from exc
        if committed.error is not None:
            raise self._failure(step, committed.error)
        try:
            # Generation -1 and no member id: a group that never joins, which is what we want.
            return int(committed.offset), consumer.consumer_group_metadata()
        except KafkaException as exc:
            raise self._failure(step, exc) from exc

    def group_metadata(self) -> Any:
        """The marker group's metadata for `open_transaction`, without a request."""
        from confluent_kafka import KafkaException

        consumer = self.consumer
        assert consumer is not None, "ensure_consumer() first"
        try:
            return consumer.consumer_group_metadata()
        except KafkaException as exc:
            raise self._failure("reading the marker group's metadata", exc) from exc

    def open_transaction(self, group_metadata: Any) -> None:
        """Begin a transaction and put the marker (batch + 1) into it, before any row.

        Sending the marker first is what lets a reused producer prove, before the task has
        consumed its rows, that no newer producer with its transactional.id exists: the
        transaction coordinator checks the producer's epoch on this request (AddOffsetsToTxn)
        and answers a fenced producer with a fatal error. The order inside a transaction
        changes nothing else: data and marker still become visible together at the commit,
        or never.
        """
        from confluent_kafka import KafkaException, TopicPartition

        producer = self._producer()
        timeout = self._timeout
        try:
            producer.begin_transaction()
        except KafkaException as exc:
            raise self._failure("begin_transaction", exc) from exc
        marker_tp = TopicPartition(self.config.topic, MARKER_PARTITION, self.batch_id + 1)
        try:
            _retrying(
                lambda: producer.send_offsets_to_transaction([marker_tp], group_metadata, timeout),
                timeout,
            )
        except KafkaException as exc:
            self._abort_if_required(exc)
            raise self._failure("send_offsets_to_transaction (marker)", exc) from exc

    def send_rows(self, rows: Iterable[Sequence[Any]]) -> int:
        """Produce every row (a tuple in `columns` order) into the open transaction; returns
        how many. The transaction is aborted if the rows fail for other reasons than Kafka's,
        or if Kafka requires it."""
        producer = self._producer()
        topic = self.config.topic
        produce, poll = producer.produce, producer.poll
        count = 0
        # The per-row work is most of a task's time (profiled in benchmarks/sink_profile.py):
        # rows go to produce() as positional arguments where they can, and delivery reports
        # are served every POLL_EVERY rows (the commit waits for all of them anyway).
        with self._in_transaction("producing rows"):
            if positional(self.config.columns):
                for row in rows:
                    while True:
                        try:
                            produce(topic, *row)
                            break
                        except BufferError:
                            poll(0.1)
                    count += 1
                    if not count % POLL_EVERY:
                        poll(0)
            else:
                arguments = produce_arguments(self.config.columns)
                for row in rows:
                    kwargs = arguments(row)
                    while True:
                        try:
                            produce(topic, **kwargs)
                            break
                        except BufferError:
                            poll(0.1)
                    count += 1
                    if not count % POLL_EVERY:
                        poll(0)
            poll(0)
        return count

    def flush(self) -> None:
        """Wait until every row produced so far is in the broker's log (still uncommitted)."""
        self._producer().flush(self._timeout)

    def commit(self) -> None:
        """Commit the open transaction: its rows and its marker become visible together."""
        producer = self._producer()
        timeout = self._timeout
        with self._in_transaction("commit_transaction"):
            _retrying(lambda: producer.commit_transaction(timeout), timeout)

    def abort(self) -> None:
        """Abort the open transaction; a failure to abort is logged, not raised."""
        from confluent_kafka import KafkaException

        try:
            self._producer().abort_transaction(self._timeout)
        except KafkaException as abort_exc:  # the original error is the one to report
            log.warning("abort_transaction failed after an error: %s", abort_exc)

    # -- errors ----------------------------------------------------------------------------

    @contextmanager
    def _in_transaction(self, step: str) -> Iterator[None]:
        from confluent_kafka import KafkaException

        try:
            yield
        except KafkaException as exc:
            self._abort_if_required(exc)
            # Fatal (fenced, ...) or retriable (a commit that timed out): no abort. The next
            # attempt's init_transactions finishes or aborts whatever is in flight, and the
            # marker then tells it whether to write.
            raise self._failure(step, exc) from exc
        except Exception:
            self.abort()
            raise

    def _abort_if_required(self, exc: BaseException) -> None:
        error = kafka_error(exc)
        if error is not None and error.txn_requires_abort():
            self.abort()

    def _failure(self, step: str, cause: BaseException | KafkaError) -> TaskProducerError:
        """The error to raise for a failed `step`, of the kind that `cause` calls for."""
        error = kafka_error(cause) if isinstance(cause, BaseException) else cause
        kind = FencedOrRetriableError if fenced_or_retriable(error) else FatalProducerError
        return kind(
            f"exactly-once sink {self.config.sink_id} -> {self.config.topic}: task "
            f"{self.task} of batch {self.batch_id} (transactional.id "
            f"{self.transactional_id}): {step} failed: {cause}"
        )

    def _producer(self) -> Producer:
        assert self.producer is not None, "ensure_producer() first"
        return self.producer


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
            if not retry_worthy(kafka_error(exc)) or time.monotonic() + pause > deadline:
                raise
            log.info("retrying after a retriable Kafka error: %s", exc)
            time.sleep(pause)
            pause = min(pause * 2, 2.0)


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
