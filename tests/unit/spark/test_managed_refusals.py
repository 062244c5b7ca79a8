"""A query that Kafka refuses an ACL is a bad job: the next driver logs in as the same
principal, so a restart cannot heal it; its stopped report names the refusal first."""

from __future__ import annotations

import threading

import pytest

from airflow_provider_kafkaspark.core.kafka.client import authorization_refusal
from airflow_provider_kafkaspark.spark.managed import (
    EXIT_BAD_JOB,
    ManagedOptions,
    ManagedQuery,
    describe_error,
    is_bad_job,
)

# As a foreachBatch failure reaches the driver: the executor's traceback deep in the text.
SINK_REFUSED = """An exception was raised by the Python Proxy. Return Message: Traceback:
  File "/x/sink/driver.py", line 88, in call
    raise FatalProducerError(...)
airflow_provider_kafkaspark.spark.sink.producer.FatalProducerError: exactly-once sink orders -> \
orders_out: init_transactions failed: KafkaError{code=TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
"""
SOURCE_REFUSED = (
    "org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access "
    "topics: [orders]"
)


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        (SINK_REFUSED, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        (SOURCE_REFUSED, "TopicAuthorizationException"),
        ("KafkaError{code=_TRANSPORT,val=-195}", None),
    ],
)
def test_refusals_are_found_in_an_errors_text(text: str, refusal: str | None) -> None:
    assert authorization_refusal(text) == refusal


def test_a_refused_query_is_a_bad_job_whose_report_names_the_refusal() -> None:
    error = RuntimeError(SINK_REFUSED)
    assert is_bad_job(error)
    report = describe_error(error)
    assert report.startswith("Kafka refused the job's principal (TRANSACTIONAL_ID_AUTHORIZATION")
    assert "kafkaspark job acls" in report and "orders_out" in report
    assert not is_bad_job(RuntimeError("KafkaError{code=_TRANSPORT,val=-195}"))


class RefusedQuery:
    """A running query whose batch Kafka refused: awaitTermination raises, as pyspark's does
    (`active_looks`: how often the loop finds it active first; 0, it ended before the loop
    looked, and only exception() has the failure)."""

    def __init__(self, active_looks: int) -> None:
        self.looks = 0
        self.active_looks = active_looks

    @property
    def isActive(self) -> bool:
        self.looks += 1
        return self.looks <= self.active_looks

    def awaitTermination(self, timeout: int) -> None:
        raise RuntimeError(SINK_REFUSED)

    def exception(self) -> RuntimeError:
        return RuntimeError(SINK_REFUSED)


@pytest.mark.parametrize("active_looks", [1, 0])
def test_a_streaming_driver_ends_a_refused_query_as_a_bad_job(
    monkeypatch: pytest.MonkeyPatch, active_looks: int
) -> None:
    # Not a compatibility check (failures_final off): the refusal alone makes it final.
    finished: list[tuple[str, int, str]] = []

    def finish(reason: str, code: int, message: str) -> int:
        finished.append((reason, code, message))
        return code

    query = ManagedQuery.__new__(ManagedQuery)
    query.options = ManagedOptions("orders", "/tmp/x")
    query.lost_lease = False
    query.bad_job = None
    query._stop_event = threading.Event()
    monkeypatch.setattr(query, "_stop_requested", lambda: False)
    monkeypatch.setattr(query, "_still_holding", lambda: True)
    monkeypatch.setattr(query, "_finish", finish)
    assert query._supervise(RefusedQuery(active_looks)) == EXIT_BAD_JOB  # type: ignore[arg-type]
    ((reason, _, message),) = finished
    assert reason == "bad job" and "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in message
