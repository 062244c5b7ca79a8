"""A small facade over confluent-kafka for the operators, the CLI and reconciliation.

confluent_kafka is imported inside the functions only: DAG files import this module, and the
scheduler parses them often and under a timeout.

Timeouts are set on purpose (see `kafka_client`): every call here ends within about
`timeout_s` (a retried call shares one budget), and fails with a typed error from
`airflow_provider_kafkaspark.errors`.

Client configs may hold SASL passwords: no message or log line of this module contains a
config value, except `bootstrap.servers`.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from airflow_provider_kafkaspark.core.kafka.client import (
    ACCESS,
    BAD_INPUT,
    BOOTSTRAP_SERVERS,
    COORDINATOR_MOVED,
    FUTURE_GRACE_S,
    GROUP_ACTIVE,
    MIN_REQUEST_S,
    NOT_FOUND,
    TRANSIENT,
    UNAVAILABLE,
    authentication_failed,
    client_config,
    codes,
    config_rejected,
    format_address,
    is_authentication_error,
    kafka_error,
    redact,
    secret_values,
)
from airflow_provider_kafkaspark.core.kafka.offsets import (
    TopicOffsets,
    TopicPartition,
    Watermarks,
    flatten,
    nest,
)
from airflow_provider_kafkaspark.errors import (
    ConsumerGroupActiveError,
    InvalidInputError,
    KafkaAccessError,
    KafkaAuthenticationError,
    KafkaCoordinatorMovedError,
    KafkaRequestError,
    KafkaSparkError,
    KafkaUnavailableError,
    TopicNotFoundError,
)

if TYPE_CHECKING:
    from concurrent.futures import Future

    from confluent_kafka import Consumer, KafkaError, KafkaException
    from confluent_kafka import TopicPartition as KafkaTopicPartition
    from confluent_kafka.admin import AdminClient

T = TypeVar("T")
R = TypeVar("R")

# The group.id of the consumers that read record timestamps when the config names none. They
# only assign partitions and never commit, so the group never appears on the broker.
DEFAULT_GROUP_ID = "kafkaspark-admin"
# How often a wait for an answer looks at error_cb, where librdkafka reports a refused login
# (the request itself would only time out).
_REFUSAL_CHECK_S = 0.2


# -- results ----------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class BrokerAddress:
    node_id: int
    host: str
    port: int

    def __str__(self) -> str:
        return format_address(self.host, self.port)


@dataclass(frozen=True)
class ClusterDescription:
    """What DescribeCluster says. In KRaft mode Kafka does not expose its controllers to
    clients: `controller_id` is then an arbitrary live broker, as the protocol specifies."""

    cluster_id: str | None
    controller_id: int | None
    brokers: list[BrokerAddress]

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster_id": self.cluster_id,
            "controller_id": self.controller_id,
            "brokers": [
                {"node_id": b.node_id, "host": b.host, "port": b.port} for b in self.brokers
            ],
        }


class _Failed(Exception):
    """A KafkaException together with what it is about (a partition, a topic, a group)."""

    def __init__(self, exc: KafkaException, subject: str) -> None:
        super().__init__(subject)
        self.exc = exc
        self.subject = subject


# -- the facade -----------------------------------------------------------------------------


class KafkaFacade:
    """Topic, offset, group and cluster questions to one Kafka cluster.

    `config` is a librdkafka client config (it must have `bootstrap.servers`); see
    `client_config` for what is added to it. One admin client is created on first use and
    kept; offsets reads that need a consumer create one per call. Each call ends within about
    `timeout_s` (`record_timestamps` and `commit_group_offsets`, which take two steps, within
    twice that) or raises: `KafkaUnavailableError` when Kafka does not answer in time,
    `TopicNotFoundError`, `KafkaAccessError`, `ConsumerGroupActiveError` or
    `InvalidInputError` when the request cannot succeed, `KafkaRequestError` otherwise.
    """

    def __init__(self, config: Mapping[str, Any], *, timeout_s: float = 10.0) -> None:
        self._config = client_config(config, timeout_s)
        self._timeout_s = float(timeout_s)
        self._bootstrap = str(self._config[BOOTSTRAP_SERVERS]).strip()
        self._secrets = secret_values(config)
        self._user_error_cb: Callable[[KafkaError], object] | None = self._config.pop(
            "error_cb", None
        )
        self._admin: AdminClient | None = None
        self._lock = threading.Lock()
        self._last_client_error: str | None = None
        # Sticky: the credentials of a facade never change, so neither does their refusal.
        self._refused: KafkaAuthenticationError | None = None

    @property
    def bootstrap_servers(self) -> str:
        return self._bootstrap

    @property
    def timeout_s(self) -> float:
        return self._timeout_s

    def close(self) -> None:
        """Drop the admin client (librdkafka destroys it with the last reference)."""
        with self._lock:
            self._admin = None

    def __enter__(self) -> KafkaFacade:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- topics and offsets -------------------------------------------------------------------

    def topic_partitions(self, topics: Iterable[str] | None = None) -> dict[str, int]:
        """Partition count of each topic; topics that do not exist are absent, never created.

        Without `topics`, every topic the client may see, internal ones included.
        """
        from confluent_kafka import KafkaException, TopicCollection

        admin = self._admin_client()
        if topics is None:

            def list_all(remaining: float) -> dict[str, int]:
                metadata = admin.list_topics(timeout=remaining)
                return {
                    name: len(t.partitions)
                    for name, t in sorted(metadata.topics.items())
                    if t.error is None or t.partitions
                }

            return self._call("a topic listing", list_all)

        names = sorted({_check_topic(t) for t in topics})
        if not names:
            return {}
        absent = codes(
            "UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_TOPIC", "UNKNOWN_TOPIC_ID", "TOPIC_EXCEPTION"
        )

        def describe(remaining: float) -> dict[str, int]:
            # DescribeTopics is one request for all topics, and librdkafka sends it with
            # topic auto-creation off whatever the client config says.
            futures = admin.describe_topics(TopicCollection(names), request_timeout=remaining)
            counts: dict[str, int] = {}
            for name in names:
                try:
                    description = self._result(futures[name], remaining + FUTURE_GRACE_S)
                except KafkaException as exc:
                    error = kafka_error(exc)
                    if error is not None and error.code() in absent:
                        continue
                    raise _Failed(exc, f"topic {name!r}") from None
                counts[name] = len(description.partitions)
            return counts

        return self._call("a topic description", describe)

    def watermarks(
        self, partitions: Iterable[TopicPartition], *, read_committed: bool = False
    ) -> dict[TopicPartition, Watermarks]:
        """Earliest and end offset of each partition, in two batched requests for all.

        With `read_committed`, `high` is the last stable offset (the end a read_committed
        reader such as Spark with `kafka.isolation.level=read_committed` stops at).
        """
        tps = sorted({_check_partition(tp) for tp in partitions})
        if not tps:
            return {}

        def ask(remaining: float) -> dict[TopicPartition, Watermarks]:
            from confluent_kafka.admin import OffsetSpec

            lows = self._list_offsets(
                {tp: OffsetSpec.earliest() for tp in tps},  # type: ignore[no-untyped-call]
                remaining,
                read_committed,
            )
            highs = self._list_offsets(
                {tp: OffsetSpec.latest() for tp in tps},  # type: ignore[no-untyped-call]
                remaining,
                read_committed,
            )
            low = self._gather_offsets(lows, remaining)
            high = self._gather_offsets(highs, remaining)
            return {tp: Watermarks(low[tp], high[tp]) for tp in tps}

        return self._call("watermarks", ask)

    def offsets_for_times(self, times: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """For each partition, the first offset whose record timestamp is >= the given time
        (epoch milliseconds).

        When no record is that late, the answer is the partition's end offset (high
        watermark), never None: that is where such a record would be written, so the result
        works as an exclusive end of a backfill and as a start that skips everything older.
        A time before the oldest retained record gives the earliest offset.
        """
        for tp, ts in times.items():
            _check_partition(tp)
            if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                raise InvalidInputError(f"{tp}: timestamp {ts!r} is not epoch milliseconds >= 0")
        tps = sorted(times)
        if not tps:
            return {}

        def ask(remaining: float) -> dict[TopicPartition, int]:
            from confluent_kafka.admin import OffsetSpec

            by_time = self._list_offsets(
                {tp: OffsetSpec.for_timestamp(times[tp]) for tp in tps}, remaining, False
            )
            # Asked together with the times, not after: one round trip instead of two.
            ends = self._list_offsets(
                {tp: OffsetSpec.latest() for tp in tps},  # type: ignore[no-untyped-call]
                remaining,
                False,
            )
            found = self._gather_offsets(by_time, remaining)
            end = self._gather_offsets(ends, remaining)
            return {tp: found[tp] if found[tp] >= 0 else end[tp] for tp in tps}

        return self._call("offsets for times", ask)

    def record_timestamps(
        self, positions: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | None]:
        """Timestamp (epoch ms) of the record at each offset, to turn an offset lag into time.

        None when the offset is at or after the partition's end (nothing to wait for), before
        its earliest retained offset, or the record has no timestamp. When the record at the
        offset is gone (compaction, transaction markers), the next record's timestamp.
        Raises `KafkaUnavailableError` when a readable partition does not answer in time.
        """
        from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, KafkaException
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        for tp, offset in positions.items():
            _check_partition(tp)
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise InvalidInputError(f"{tp}: offset {offset!r} is not an offset >= 0")
        result: dict[TopicPartition, int | None] = {tp: None for tp in positions}
        if not positions:
            return result
        marks = self.watermarks(positions)
        wanted = {
            tp: offset
            for tp, offset in positions.items()
            if marks[tp].low <= offset < marks[tp].high
        }
        if not wanted:
            return result
        # The partition ends without a record (an EOF event), or its offset was deleted since
        # the watermarks were read (an offset reset error): both answer None, without waiting.
        no_record = codes("_PARTITION_EOF", "_AUTO_OFFSET_RESET", "OFFSET_OUT_OF_RANGE")
        fatal = codes(*NOT_FOUND, *ACCESS)
        consumer = self._consumer()
        try:
            consumer.assign(
                [KafkaTopicPartition(tp.topic, tp.partition, off) for tp, off in wanted.items()]
            )
            pending = set(wanted)
            deadline = time.monotonic() + self._timeout_s
            while pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    missing = ", ".join(str(tp) for tp in sorted(pending)[:10])
                    self._raise_unavailable(
                        "record timestamps", f"no record from partitions {missing}"
                    )
                message = consumer.poll(min(remaining, 0.5))
                self._raise_if_refused()
                if message is None:
                    continue
                topic, partition = message.topic(), message.partition()
                source = (
                    TopicPartition(topic, partition)
                    if topic is not None and partition is not None
                    else None
                )
                error = message.error()
                if error is not None:
                    if source in pending and error.code() in no_record:
                        pending.discard(source)
                    elif error.code() in fatal:
                        raise self._translate(
                            KafkaException(error), "record timestamps", f"partition {source}"
                        )
                    # Other errors (a broker dropping out) are retried by librdkafka until
                    # the deadline.
                    continue
                if source is None or source not in pending:
                    continue
                kind, ts = message.timestamp()
                result[source] = ts if kind != TIMESTAMP_NOT_AVAILABLE and ts >= 0 else None
                pending.discard(source)
                # Stops fetching a partition that has answered.
                consumer.pause([KafkaTopicPartition(source.topic, source.partition)])
        finally:
            consumer.close()
        return result

    # -- consumer groups ------------------------------------------------------------------------

    def group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> TopicOffsets:
        """Committed offsets of a consumer group: all its partitions, or those given.

        Partitions without a committed offset are absent; an unknown group gives {}.
        """
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        _check_group(group_id)
        requested: list[KafkaTopicPartition] | None = None
        if partitions is not None:
            requested = [
                KafkaTopicPartition(tp.topic, tp.partition)
                for tp in sorted({_check_partition(tp) for tp in partitions})
            ]
            if not requested:
                return {}
        admin = self._admin_client()

        def ask(remaining: float) -> TopicOffsets:
            request = ConsumerGroupTopicPartitions(group_id, requested)
            futures = admin.list_consumer_group_offsets([request], request_timeout=remaining)
            answer = self._result(futures[group_id], remaining + FUTURE_GRACE_S)
            found: list[tuple[TopicPartition, int]] = []
            for ktp in answer.topic_partitions or []:
                if ktp.error is not None:
                    raise _Failed(
                        KafkaException(ktp.error),
                        f"group {group_id!r} offset of {ktp.topic}-{ktp.partition}",
                    )
                if ktp.offset >= 0:
                    found.append((TopicPartition(ktp.topic, ktp.partition), ktp.offset))
            return nest(sorted(found))

        return self._call(f"offsets of consumer group {group_id!r}", ask)

    def commit_group_offsets(self, group_id: str, offsets: TopicOffsets) -> None:
        """Set a consumer group's committed offsets (the group must have no active member).

        Every partition is checked to exist first: Kafka applies such a commit partition by
        partition, so one unknown partition would otherwise leave a half-applied commit.
        """
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        _check_group(group_id)
        flat = flatten(offsets)
        for tp, offset in flat.items():
            _check_partition(tp)
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise InvalidInputError(f"{tp}: offset {offset!r} is not an offset >= 0")
        if not flat:
            return
        counts = self.topic_partitions({tp.topic for tp in flat})
        missing = [tp for tp in sorted(flat) if tp.partition >= counts.get(tp.topic, 0)]
        if missing:
            raise TopicNotFoundError(
                f"Kafka at {self._bootstrap}: partitions "
                f"{', '.join(str(tp) for tp in missing[:10])} do not exist; no offset of "
                f"consumer group {group_id!r} was changed"
            )
        admin = self._admin_client()
        request = [
            KafkaTopicPartition(tp.topic, tp.partition, offset)
            for tp, offset in sorted(flat.items())
        ]

        def alter(remaining: float) -> None:
            futures = admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group_id, request)], request_timeout=remaining
            )
            answer = self._result(futures[group_id], remaining + FUTURE_GRACE_S)
            for ktp in answer.topic_partitions or []:
                if ktp.error is not None:
                    raise _Failed(
                        KafkaException(ktp.error),
                        f"group {group_id!r} offset of {ktp.topic}-{ktp.partition}",
                    )

        self._call(f"an offset commit of consumer group {group_id!r}", alter)

    # -- cluster ----------------------------------------------------------------------------------

    def describe_cluster(self) -> ClusterDescription:
        admin = self._admin_client()

        def ask(remaining: float) -> ClusterDescription:
            answer = self._result(
                admin.describe_cluster(request_timeout=remaining), remaining + FUTURE_GRACE_S
            )
            controller = answer.controller
            return ClusterDescription(
                cluster_id=answer.cluster_id,
                controller_id=controller.id if controller is not None else None,
                brokers=sorted(BrokerAddress(n.id, str(n.host), n.port) for n in answer.nodes),
            )

        return self._call("a cluster description", ask)

    # -- internals --------------------------------------------------------------------------------

    def _admin_client(self) -> AdminClient:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        with self._lock:
            if self._admin is None:
                try:
                    conf: dict[str, Any] = {**self._config, "error_cb": self._on_client_error}
                    self._admin = AdminClient(conf)
                except (KafkaException, TypeError, ValueError) as exc:
                    raise config_rejected(exc) from None
            return self._admin

    def _consumer(self) -> Consumer:
        from confluent_kafka import Consumer, KafkaException

        config = {
            # Fetch less per partition than the 1 MiB default: one record is all we want.
            "fetch.message.max.bytes": 64 * 1024,
            **self._config,
            "group.id": self._config.get("group.id") or DEFAULT_GROUP_ID,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            # An offset deleted under our feet must answer, not silently jump elsewhere.
            "auto.offset.reset": "error",
            # read_committed would stall at an open transaction until the deadline.
            "isolation.level": "read_uncommitted",
            "error_cb": self._on_client_error,
        }
        try:
            return Consumer(config)
        except (KafkaException, TypeError, ValueError) as exc:
            raise config_rejected(exc) from None

    def _on_client_error(self, error: KafkaError) -> None:
        from confluent_kafka import KafkaError

        if error.code() != KafkaError._ALL_BROKERS_DOWN:
            self._last_client_error = error.str()
        if self._refused is None and is_authentication_error(error):
            self._refused = authentication_failed(self._config, error.str(), code=error.code())
        if self._user_error_cb is not None:
            self._user_error_cb(error)

    def _list_offsets(
        self,
        specs: Mapping[TopicPartition, Any],
        remaining: float,
        read_committed: bool,
    ) -> dict[TopicPartition, Future[Any]]:
        from confluent_kafka import IsolationLevel
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        admin = self._admin_client()
        request = {KafkaTopicPartition(tp.topic, tp.partition): spec for tp, spec in specs.items()}
        isolation = (
            IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        )
        futures = admin.list_offsets(request, isolation_level=isolation, request_timeout=remaining)
        return {TopicPartition(k.topic, k.partition): f for k, f in futures.items()}

    def _call(self, what: str, attempt: Callable[[float], T]) -> T:
        """`attempt(seconds left)` until it succeeds, fails for good, or the budget is spent.

        A cluster that just (re)started answers "coordinator loading" or "leader not
        available" for a while; that is retried within the budget rather than reported.
        """
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + self._timeout_s
        delay = 0.1
        while True:
            remaining = max(MIN_REQUEST_S, deadline - time.monotonic())
            try:
                return attempt(remaining)
            except (KafkaException, _Failed) as failure:
                exc = failure.exc if isinstance(failure, _Failed) else failure
                subject = failure.subject if isinstance(failure, _Failed) else None
                error = kafka_error(exc)
                if error is not None and error.code() in codes(*COORDINATOR_MOVED):
                    raise KafkaCoordinatorMovedError(
                        f"Kafka at {self._bootstrap}: {what} "
                        f"({subject or 'request'}) reached a broker that is no longer the "
                        f"group's coordinator: {self._redact(error.str())}; a new client "
                        "finds the new one"
                    ) from None
                transient = error is not None and error.code() in codes(*TRANSIENT)
                if transient and time.monotonic() + delay < deadline:
                    time.sleep(delay)
                    delay = min(1.0, delay * 2)
                    continue
                raise self._translate(exc, what, subject) from None
            except concurrent.futures.TimeoutError:
                self._raise_unavailable(what, "no answer")
            finally:
                self._serve_events()

    def _result(self, future: Future[R], timeout: float) -> R:
        """`future.result(timeout)`, except that a login the broker refused ends the wait at
        once: librdkafka tells that only to error_cb, which runs when the client is polled."""
        deadline = time.monotonic() + timeout
        while True:
            self._serve_events()
            self._raise_if_refused()
            remaining = deadline - time.monotonic()
            try:
                return future.result(timeout=max(0.0, min(_REFUSAL_CHECK_S, remaining)))
            except concurrent.futures.TimeoutError:
                if remaining <= _REFUSAL_CHECK_S:
                    raise

    def _gather_offsets(
        self, futures: Mapping[TopicPartition, Future[Any]], remaining: float
    ) -> dict[TopicPartition, int]:
        from confluent_kafka import KafkaException

        result: dict[TopicPartition, int] = {}
        for tp in sorted(futures):
            try:
                answer = self._result(futures[tp], remaining + FUTURE_GRACE_S)
            except KafkaException as exc:
                raise _Failed(exc, f"partition {tp}") from None
            result[tp] = int(answer.offset)
        return result

    def _raise_if_refused(self) -> None:
        if self._refused is not None:
            raise self._refused

    def _serve_events(self) -> None:
        # error_cb runs only when the client is polled.
        admin = self._admin
        if admin is not None:
            admin.poll(0)

    def _translate(
        self, exc: KafkaException, what: str, subject: str | None = None
    ) -> KafkaSparkError:
        self._serve_events()
        error = kafka_error(exc)
        where = f"Kafka at {self._bootstrap}"
        if error is None:
            return KafkaRequestError(f"{where}: {what} failed: {self._redact(str(exc))}")
        code, text = error.code(), self._redact(f"{error.str()} ({error.name()})")
        if code in codes(*UNAVAILABLE):
            return self._unavailable(what, text)
        if code in codes(*NOT_FOUND):
            return TopicNotFoundError(f"{where}: {subject or what}: does not exist: {text}")
        if code in codes(*ACCESS):
            return KafkaAccessError(
                f"{where} refused {what}: {text}; check the client's credentials and ACLs "
                "(keys security.protocol, sasl.*, ssl.*)"
            )
        if code in codes(*GROUP_ACTIVE):
            return ConsumerGroupActiveError(
                f"{where}: {what}: the group has active members, stop them first: {text}"
            )
        if code in codes(*BAD_INPUT):
            return InvalidInputError(f"{where}: {what} ({subject or 'request'}) is invalid: {text}")
        return KafkaRequestError(f"{where}: {what} failed ({subject or 'request'}): {text}")

    def _unavailable(self, what: str, reason: str) -> KafkaSparkError:
        """Kafka did not answer in time; or it did, refusing the login, and a blocking call
        (a topic listing) could not stop early to say so."""
        self._serve_events()
        if self._refused is not None:
            return self._refused
        last = self._last_client_error
        detail = f"; last client error: {self._redact(last)}" if last else ""
        return KafkaUnavailableError(
            f"Kafka at {self._bootstrap} did not answer {what} within {self._timeout_s:g}s: "
            f"{reason}{detail}"
        )

    def _raise_unavailable(self, what: str, reason: str) -> NoReturn:
        raise self._unavailable(what, reason)

    def _redact(self, text: str) -> str:
        return redact(text, self._secrets)


def _check_topic(topic: object) -> str:
    if not isinstance(topic, str) or not topic:
        raise InvalidInputError(f"topic name {topic!r} is not a non-empty string")
    return topic


def _check_partition(tp: object) -> TopicPartition:
    if not isinstance(tp, TopicPartition):
        raise InvalidInputError(f"{tp!r} is not a TopicPartition")
    _check_topic(tp.topic)
    if isinstance(tp.partition, bool) or not isinstance(tp.partition, int) or tp.partition < 0:
        raise InvalidInputError(f"topic {tp.topic!r}: partition {tp.partition!r} is not >= 0")
    return tp


def _check_group(group_id: object) -> None:
    if not isinstance(group_id, str) or not group_id:
        raise InvalidInputError(f"consumer group id {group_id!r} is not a non-empty string")
