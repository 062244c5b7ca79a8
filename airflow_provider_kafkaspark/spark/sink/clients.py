"""Executor side: the Kafka clients one Python worker keeps between exactly-once sink tasks.

Creating a transactional producer and running `init_transactions()` costs a few round trips
to the cluster, far more than writing a micro-batch task's rows, so each Python worker keeps
its producers and marker consumers between tasks (Spark reuses Python workers:
`spark.python.worker.reuse`, true by default). Why that stays exactly-once is told under
"Client reuse" in `docs/exactly_once_sink.md`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Producer

# The sink's modules log under one name, the one its users configure.
log = logging.getLogger("airflow_provider_kafkaspark.spark.sink")

# How many transactional producers (and as many marker consumers) one Python worker keeps
# between tasks (see "Client reuse"), least recently used closed first. Each is a librdkafka
# client with its own threads and broker connections; a worker needs one per output task it
# runs (tasks of all sinks in the application).
MAX_CACHED_PRODUCERS = 64


def fingerprint(settings: Mapping[str, Any]) -> str:
    """A digest of a client config: a cached client is reused only under the same settings.

    A digest, not the settings themselves, so that the cache keys hold no password.
    """
    text = json.dumps(sorted(settings.items()), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def close_quietly(client: Producer | Consumer) -> None:
    try:
        client.close()
    except Exception as exc:  # noqa: BLE001 - closing must not hide the task's own error
        # A fenced producer, replaced on purpose, refuses to close with the fencing error.
        level = logging.INFO if "fenced" in str(exc).lower() else logging.WARNING
        log.log(level, "closing a Kafka client of the exactly-once sink failed: %s", exc)


class ClientCache:
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
        # txn id -> (config fingerprint, producer, (marker group, the marker it last saw))
        self._producers: OrderedDict[str, tuple[str, Producer, tuple[str, int] | None]] = (
            OrderedDict()
        )
        self._consumers: OrderedDict[tuple[str, str], Consumer] = OrderedDict()
        self._inherited: list[Any] = []

    def _check_process(self) -> None:
        # A forked child inherits the objects but not librdkafka's threads: it must neither
        # use nor destroy them (destroying waits on those threads). Keep them referenced,
        # unused, and start empty.
        if self._pid != os.getpid():
            self._inherited.extend(p for _, p, _ in self._producers.values())
            self._inherited.extend(self._consumers.values())
            self._producers.clear()
            self._consumers.clear()
            self._pid = os.getpid()

    def take(
        self, txn_id: str, producer_key: str, group: str, consumer_key: str
    ) -> tuple[Producer | None, Consumer | None]:
        """The cached producer for `txn_id` and consumer for `group`, removed from the cache."""
        producer, consumer, _ = self.take_with_marker(txn_id, producer_key, group, consumer_key)
        return producer, consumer

    def take_with_marker(
        self, txn_id: str, producer_key: str, group: str, consumer_key: str
    ) -> tuple[Producer | None, Consumer | None, int | None]:
        """`take`, and the marker of `group` the producer last read or committed (None if
        it kept none for that group): see "Markers a producer already knows" in
        docs/exactly_once_sink.md for when a task may use it instead of reading the group."""
        stale: list[Any] = []
        producer = None
        marker = None
        with self._lock:
            self._check_process()
            entry = self._producers.pop(txn_id, None)
            if entry is not None:
                if entry[0] == producer_key:
                    producer = entry[1]
                    if entry[2] is not None and entry[2][0] == group:
                        marker = entry[2][1]
                else:
                    stale.append(entry[1])
            consumer = self._consumers.pop((group, consumer_key), None)
        for client in stale:
            close_quietly(client)
        return producer, consumer, marker

    def put(
        self,
        txn_id: str,
        producer_key: str,
        producer: Producer,
        group: str,
        consumer_key: str,
        consumer: Consumer | None,
        *,
        marker: int | None = None,
    ) -> None:
        """Keep a producer (ready: no open transaction) and its marker consumer for later,
        with the marker of `group` the producer last read or committed, if any."""
        evicted: list[Any] = []
        with self._lock:
            self._check_process()
            old = self._producers.pop(txn_id, None)
            if old is not None:
                evicted.append(old[1])
            known = None if marker is None else (group, marker)
            self._producers[txn_id] = (producer_key, producer, known)
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
            close_quietly(client)

    def clear(self) -> int:
        """Close every cached client; returns how many there were."""
        with self._lock:
            self._check_process()
            clients: list[Any] = [p for _, p, _ in self._producers.values()]
            clients.extend(self._consumers.values())
            self._producers.clear()
            self._consumers.clear()
        for client in clients:
            close_quietly(client)
        return len(clients)

    def sizes(self) -> tuple[int, int]:
        """(producers, consumers) cached in this process."""
        with self._lock:
            self._check_process()
            return len(self._producers), len(self._consumers)


# This Python worker's cache, shared by the tasks of every sink it runs.
CLIENTS = ClientCache(MAX_CACHED_PRODUCERS)


def close_cached_clients() -> int:
    """Close the producers and marker consumers this process keeps between tasks.

    Returns how many were closed. Never needed for correctness (a cached producer has no
    open transaction); for tests, or a long-lived process that stops writing.
    """
    return CLIENTS.clear()
