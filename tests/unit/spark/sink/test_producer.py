"""A task's producer (`spark/sink/producer.py`): which Kafka errors another try can fix, the
two kinds its errors come in, and librdkafka's log lines."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError

from airflow_provider_kafkaspark.core.kafka.client import fenced_or_retriable, retry_worthy
from airflow_provider_kafkaspark.spark.sink.producer import (
    ProducerLog,
)


@pytest.mark.parametrize(
    ("error", "worth"),
    [
        (KafkaError(KafkaError.NOT_COORDINATOR), True),
        (KafkaError(KafkaError.UNSTABLE_OFFSET_COMMIT), True),
        (KafkaError(3, retriable=True), True),
        # Fatal (fenced and friends): never. Abortable: abort, not retry.
        (KafkaError(KafkaError.NOT_COORDINATOR, fatal=True), False),
        (KafkaError(KafkaError.NOT_COORDINATOR, txn_requires_abort=True), False),
        (KafkaError(KafkaError.INVALID_PRODUCER_EPOCH), False),
        (None, False),
    ],
)
def test_retry_only_what_another_try_can_fix(error: KafkaError | None, worth: bool) -> None:
    assert retry_worthy(error) is worth


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (KafkaError(KafkaError._FENCED, fatal=True), "fenced_or_retriable"),
        (KafkaError(KafkaError.PRODUCER_FENCED, fatal=True), "fenced_or_retriable"),
        (KafkaError(KafkaError.INVALID_PRODUCER_EPOCH), "fenced_or_retriable"),
        (KafkaError(KafkaError.INVALID_PRODUCER_ID_MAPPING), "fenced_or_retriable"),
        (KafkaError(KafkaError._TIMED_OUT), "fenced_or_retriable"),
        (KafkaError(KafkaError.NOT_COORDINATOR), "fenced_or_retriable"),
        (KafkaError(3, retriable=True), "fenced_or_retriable"),
        (KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, fatal=True), "fatal"),
        (KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED), "fatal"),
        (KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, txn_requires_abort=True), "fatal"),
        (KafkaError(KafkaError._TIMED_OUT, fatal=True), "fatal"),
        (None, "fatal"),
    ],
)
def test_producer_errors_come_in_two_kinds(error: KafkaError | None, kind: str) -> None:
    expected = kind == "fenced_or_retriable"
    assert fenced_or_retriable(error) is expected


def test_librdkafka_fencing_lines_are_one_info_line_per_producer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="airflow_provider_kafkaspark.spark.sink")
    sink_log = ProducerLog("kafkaspark-sink-0")
    fatal = "Fatal error: Broker: Producer attempted an operation with an old epoch: fenced"
    for _ in range(3):
        sink_log.log(logging.CRITICAL, "%s [%s] %s", "FATAL", "rdkafka#producer-1", fatal)
    sink_log.log(logging.WARNING, "%s [%s] %s", "FAIL", "rdkafka#producer-1", "Disconnected")
    seen = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in seen] == [logging.INFO, logging.WARNING]
    assert "kafkaspark-sink-0 was fenced" in seen[0][1] and "old epoch" in seen[0][1]
    assert seen[1][1] == "librdkafka: FAIL [rdkafka#producer-1] Disconnected"
