"""The fake Kafka cluster (`fakes.FakeCluster`) as a fixture, with the worker's client cache
emptied before and after each test."""

from __future__ import annotations

from collections.abc import Iterator

import confluent_kafka
import pytest

from airflow_provider_kafkaspark.spark.sink.clients import close_cached_clients
from tests.unit.spark.sink import fakes
from tests.unit.spark.sink.fakes import FakeCluster, FakeConsumer, FakeProducer


@pytest.fixture
def fake_kafka(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCluster]:
    fakes.CLUSTER = FakeCluster()
    monkeypatch.setattr(confluent_kafka, "Producer", FakeProducer)
    monkeypatch.setattr(confluent_kafka, "Consumer", FakeConsumer)
    close_cached_clients()
    yield fakes.CLUSTER
    close_cached_clients()
