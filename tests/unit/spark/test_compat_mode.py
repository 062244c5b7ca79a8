"""A compatibility check's driver: one batch into `noop`, and any failure of it reported as
a final bad job with Spark's message (the real driver: tests/integration/test_compat_check.py)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from airflow_provider_kafkaspark.spark.managed import (
    EXIT_BAD_JOB,
    ManagedOptions,
    ManagedQuery,
    describe_error,
)
from airflow_provider_kafkaspark.spark.query import compat_check_writer


class Writer:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def format(self, name: str) -> Writer:
        self.calls.append(("format", name))
        return self

    def trigger(self, **kwargs: Any) -> Writer:
        self.calls.append(("trigger", kwargs))
        return self


def test_the_check_writes_one_batch_into_noop() -> None:
    writer = Writer()
    assert compat_check_writer(writer) is writer
    assert writer.calls == [("format", "noop"), ("trigger", {"once": True})]


SPARK_FAILURE = (
    "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: "
    "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match existing "
    "state key schema. SQLSTATE: XXKST\n"
    "=== Streaming Query ===\n"
    "Identifier: clicks-compat-check [id = 1, runId = 2]\n"
    "Current Committed Offsets: {KafkaV2[Subscribe[t]]: {}}\n"
    "Logical Plan:\n"
    "~WriteToMicroBatchDataSource noop\n"
)


def test_a_query_failure_is_reported_without_the_query_description() -> None:
    text = describe_error(RuntimeError(SPARK_FAILURE))
    assert text.startswith("RuntimeError: [STREAM_FAILED]")
    assert text.endswith("SQLSTATE: XXKST"), text
    assert "Current Committed Offsets" not in text


class FailedQuery:
    """A query whose batch failed: awaitTermination raises it, as pyspark's does."""

    @property
    def isActive(self) -> bool:
        return False

    def awaitTermination(self, timeout: int) -> None:
        raise RuntimeError(SPARK_FAILURE)

    def exception(self) -> RuntimeError:
        return RuntimeError(SPARK_FAILURE)


def supervised(failed: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, str]]:
    """What a check driver's supervision of `failed` finishes with (reason, code, message)."""
    finished: list[tuple[str, int, str]] = []

    def finish(reason: str, code: int, message: str) -> int:
        finished.append((reason, code, message))
        return code

    query = ManagedQuery.__new__(ManagedQuery)
    query.options = ManagedOptions("clicks-compat-check", "/tmp/x", failures_final=True)
    query.lost_lease = False
    query.bad_job = None
    query._stop_event = threading.Event()
    monkeypatch.setattr(query, "_stop_requested", lambda: False)
    monkeypatch.setattr(query, "_finish", finish)
    assert query._supervise(failed) == EXIT_BAD_JOB
    return finished


def test_a_checks_failed_batch_is_a_final_bad_job(monkeypatch: pytest.MonkeyPatch) -> None:
    # A query that ends before the loop looks: the failure comes from exception().
    (reason, code, message), *_ = supervised(FailedQuery(), monkeypatch)
    assert (reason, code) == ("bad job", EXIT_BAD_JOB)
    assert "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE]" in message


class FailingQuery(FailedQuery):
    """Active when the loop looks, failed by the time it waits."""

    def __init__(self) -> None:
        self.looks = 0

    @property
    def isActive(self) -> bool:
        self.looks += 1
        return self.looks == 1


def test_the_failure_raised_by_the_wait_is_reported_too(monkeypatch: pytest.MonkeyPatch) -> None:
    (_reason, code, message), *_ = supervised(FailingQuery(), monkeypatch)
    assert code == EXIT_BAD_JOB and "STATE_STORE_KEY_SCHEMA" in message
