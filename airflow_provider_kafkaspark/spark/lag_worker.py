"""Lag commits from a child process, so that a crash inside librdkafka spares the driver.

The reliability suite's broker-loss scenario caught librdkafka (2.x, through confluent-kafka)
aborting the driver process with `rd_kafka_enq_once_del_source_return: Assertion
'eonce->refcnt > 0'` right after a lag commit (an admin offset commit) timed out while a
broker was down; once the driver hung instead. Lag commits are for monitoring only and must
never stop the query, so the admin client lives in a spawned child: if it dies or stops
answering, the commit counts as failed, the child is replaced on the next commit, and the
driver goes on.

A commit the child answers with an error counts too: the child (and its client) is replaced
at once when the group's coordinator moved, and after `REPLACE_AFTER_FAILURES` failures in a
row of any other kind. librdkafka's admin client keeps the group coordinator it found; when
the coordinator moves (a broker restarted, its leadership of `__consumer_offsets` handed
back), every commit through the old client was answered `NOT_COORDINATOR` for as long as the
driver ran, while a new client committed at once.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import Any

from airflow_provider_kafkaspark.core.kafka.offsets import TopicOffsets
from airflow_provider_kafkaspark.errors import KafkaSparkError

log = logging.getLogger("kafkaspark.progress")

# The child's answer may take the facade's two steps (partition check, commit), each within
# its timeout; beyond this it is stuck and gets replaced.
_ANSWER_GRACE_S = 10.0
# One failure may be the moment a coordinator moves; a second in a row replaces the client.
REPLACE_AFTER_FAILURES = 2


def replace_client(consecutive_failures: int, *, coordinator_moved: bool = False) -> bool:
    """Whether the child answering with errors gets replaced before the next commit: at once
    when the group's coordinator moved (only a new client finds it), else after a run of
    failures of any kind."""
    return coordinator_moved or consecutive_failures >= REPLACE_AFTER_FAILURES


class LagCommitError(KafkaSparkError):
    """A lag commit failed, or the child making it died or stopped answering."""


def _serve(conn: Connection, config: dict[str, Any], timeout_s: float) -> None:
    """The child: one KafkaFacade, one commit per request; the answer is None, or the error's
    text and whether only a new client can get past it (the coordinator moved)."""
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.errors import KafkaCoordinatorMovedError

    with KafkaFacade(config, timeout_s=timeout_s) as kafka:
        while True:
            try:
                request = conn.recv()
            except EOFError:
                return
            if request is None:
                return
            group, offsets = request
            try:
                kafka.commit_group_offsets(group, offsets)
            except KafkaCoordinatorMovedError as exc:
                conn.send((str(exc), True))
            except Exception as exc:  # noqa: BLE001 - sent back, counted by the parent
                conn.send((str(exc), False))
            else:
                conn.send(None)


class LagCommitProcess:
    """`commit_group_offsets` of a KafkaFacade, made in a spawned child process."""

    def __init__(self, config: Mapping[str, Any], *, timeout_s: float = 10.0) -> None:
        self._config = dict(config)
        self._timeout_s = float(timeout_s)
        self._context = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._conn: Connection | None = None
        self.restarts = 0
        self.failures_in_a_row = 0

    def _start(self) -> Connection:
        if self._process is not None:
            self.restarts += 1
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=_serve,
            args=(child, self._config, self._timeout_s),
            name="kafkaspark-lag-commit",
            daemon=True,
        )
        process.start()
        child.close()
        self._process, self._conn = process, parent
        return parent

    def _discard(self) -> int | None:
        process, self._process = self._process, None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if process is None:
            return None
        if process.is_alive():
            process.kill()
        process.join(5)
        self._process = process  # remembered only so that the next start counts a restart
        return int(process.exitcode) if process.exitcode is not None else None

    def commit_group_offsets(self, group_id: str, offsets: TopicOffsets) -> None:
        alive = self._process is not None and self._process.is_alive()
        conn = self._conn if alive and self._conn is not None else self._start()
        try:
            conn.send((group_id, offsets))
            if not conn.poll(2 * self._timeout_s + _ANSWER_GRACE_S):
                self._discard()
                self.failures_in_a_row += 1
                raise LagCommitError(
                    f"the lag commit process gave no answer within "
                    f"{2 * self._timeout_s + _ANSWER_GRACE_S:g}s; replaced"
                )
            answer = conn.recv()
        except (EOFError, OSError) as exc:
            code = self._discard()
            self.failures_in_a_row += 1
            raise LagCommitError(
                f"the lag commit process died (exit code {code}); it is restarted on the "
                f"next commit"
            ) from exc
        if answer is None:
            self.failures_in_a_row = 0
            return
        text, moved = answer
        self.failures_in_a_row += 1
        if replace_client(self.failures_in_a_row, coordinator_moved=moved):
            self._discard()
            raise LagCommitError(
                f"{text} ({self.failures_in_a_row} failures in a row: a new client makes "
                f"the next commit)"
            )
        raise LagCommitError(text)

    def close(self) -> None:
        if self._conn is not None and self._process is not None and self._process.is_alive():
            try:
                self._conn.send(None)
            except OSError:
                pass
            self._process.join(5)
        self._discard()
        self._process = None
