"""The sink's driver side (`spark/sink/driver.py`): the protocol's names, the task config it
ships, the refusal of bad settings, and its batch reports."""

from __future__ import annotations

import dataclasses
import os
import pickle

import pytest

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.spark.sink.config import SinkTaskConfig
from airflow_provider_kafkaspark.spark.sink.driver import (
    DEFAULT_TRANSACTION_TIMEOUT_MS,
    SinkBatchReport,
)
from airflow_provider_kafkaspark.spark.sink.fault_points import (
    DURING_SINK_WRITE,
)
from airflow_provider_kafkaspark.spark.sink.task import TaskResult
from tests.unit.spark.sink.fakes import (
    BOOTSTRAP,
    make_sink,
)


def test_transactional_id_and_marker_group_follow_the_protocol() -> None:
    sink = make_sink()
    assert sink.transactional_id(0) == "orders-0"
    assert sink.transactional_id(12) == "orders-12"
    assert sink.marker_group(3) == "orders.q-1.p3"
    # Different queries of one sink id never share markers; ids do not depend on the query.
    other = make_sink(query_id="q-2")
    assert other.marker_group(3) != sink.marker_group(3)
    assert other.transactional_id(3) == sink.transactional_id(3)


def test_task_config_is_plain_and_picklable() -> None:
    sink = make_sink(producer_config={**BOOTSTRAP, "linger.ms": 5, "sasl.password": "secret"})
    config = sink.task_config(["value", "key"])
    assert isinstance(config, SinkTaskConfig)
    restored = pickle.loads(pickle.dumps(config))
    assert restored == config
    producer = config.producer_config
    assert producer["enable.idempotence"] is True
    assert producer["transaction.timeout.ms"] == DEFAULT_TRANSACTION_TIMEOUT_MS
    assert "transactional.id" not in producer  # set per task on the executor
    # The marker consumer gets how to connect and log in, not producer tuning.
    assert config.consumer_config == {**BOOTSTRAP, "sasl.password": "secret"}
    assert config.columns == ("value", "key")
    assert config.driver_pid == os.getpid()
    assert config.slots is None and config.crash is None


def test_task_config_is_frozen_and_maps_task_indexes_to_slots() -> None:
    sink = make_sink()
    config = sink.task_config(["value"], slots=[2, 0, 1], crash=DURING_SINK_WRITE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.topic = "other"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(config)) == config
    assert config.slots == (2, 0, 1) and config.crash == DURING_SINK_WRITE
    assert [config.slot(i) for i in range(3)] == [2, 0, 1]
    assert sink.task_config(["value"]).slot(7) == 7  # no slots: the index itself


def test_default_transaction_timeout_is_short_but_under_the_broker_cap() -> None:
    assert 10_000 <= DEFAULT_TRANSACTION_TIMEOUT_MS <= 900_000
    config = make_sink(transaction_timeout_ms=5_000).task_config(["value"])
    assert config.producer_config["transaction.timeout.ms"] == 5_000


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"producer_config": {**BOOTSTRAP, "transactional.id": "x"}}, "`transactional.id`"),
        ({"producer_config": {**BOOTSTRAP, "transaction.timeout.ms": 1}}, "transaction_timeout"),
        ({"producer_config": {**BOOTSTRAP, "enable.idempotence": False}}, "enable.idempotence"),
        ({"producer_config": {"linger.ms": 5}}, "bootstrap.servers"),
        ({"producer_config": {**BOOTSTRAP, "error_cb": print}}, "`error_cb`"),
        ({"consumer_config": {**BOOTSTRAP, "group.id": "g"}}, "`group.id`"),
        ({"topic": ""}, "topic"),
        ({"sink_id": "a b"}, "sink_id"),
        ({"query_id": "q/1"}, "query_id"),
        ({"transaction_timeout_ms": 0}, "transaction_timeout_ms must be positive"),
        ({"transaction_timeout_ms": 1.5}, "transaction_timeout_ms must be an integer"),
    ],
)
def test_bad_configuration_is_refused(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        make_sink(**overrides)


def test_refusals_never_echo_secret_values() -> None:
    with pytest.raises(InvalidInputError) as info:
        make_sink(producer_config={**BOOTSTRAP, "sasl.password": object()})
    assert "sasl.password" in str(info.value) and "object at" not in str(info.value)


def test_report_counts_written_skipped_and_empty_tasks() -> None:
    results = [
        TaskResult(0, "written", 10, 0.5),
        TaskResult(1, "skipped", 0, 0.1),
        TaskResult(2, "empty", 0, 0.1),
        TaskResult(3, "written", 7, 0.4),
    ]
    report = SinkBatchReport.of(4, results, 1.23456)
    assert report.to_dict() == {
        "batch_id": 4,
        "tasks": 4,
        "tasks_written": 2,
        "tasks_skipped": 1,
        "tasks_empty": 1,
        "rows_written": 17,
        "seconds": 1.235,
    }


def test_sink_keeps_no_reports_until_a_batch_ran() -> None:
    sink = make_sink(keep_reports=2)
    assert sink.reports == [] and sink.last_report is None


def test_arrow_is_the_default_when_pyarrow_is_there() -> None:
    pytest.importorskip("pyarrow")
    assert make_sink().arrow is True
    assert make_sink(arrow=False).arrow is False
    assert make_sink().task_config(["value"]).reuse_clients is True
