"""The clients a Python worker keeps between tasks (`spark/sink/clients.py`)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from airflow_provider_kafkaspark.spark.sink.clients import ClientCache
from tests.unit.spark.sink.fakes import (
    FakeConsumer,
    FakeProducer,
)


def test_cache_keeps_at_most_its_limit_and_closes_the_oldest() -> None:
    cache = ClientCache(limit=2)
    producers: list[Any] = [FakeProducer({"transactional.id": f"s-{i}"}) for i in range(3)]
    consumers: list[Any] = [
        FakeConsumer({"group.id": f"g{i}", "isolation.level": "read_committed"}) for i in range(3)
    ]
    for i in range(3):
        cache.put(f"s-{i}", "k", producers[i], f"g{i}", "c", consumers[i])
    assert cache.sizes() == (2, 2)
    assert producers[0].closed and consumers[0].closed
    assert cache.take("s-2", "k", "g2", "c") == (producers[2], consumers[2])
    assert cache.take("s-2", "k", "g2", "c") == (None, None)  # taken out while in use
    assert cache.clear() == 2 and producers[1].closed


def test_a_forked_child_never_uses_its_parents_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ClientCache(limit=4)
    producer: Any = FakeProducer({"transactional.id": "s-0"})
    cache.put("s-0", "k", producer, "g", "c", None)
    monkeypatch.setattr(os, "getpid", lambda: -1)
    assert cache.take("s-0", "k", "g", "c") == (None, None)
    assert not producer.closed  # not destroyed either: its threads are not in the child
