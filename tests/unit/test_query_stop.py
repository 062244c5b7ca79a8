"""stop_query asks again while a stop has not taken effect (an interrupt Spark 3.5 lost)."""

from __future__ import annotations

import threading
from typing import Any, cast

import pytest

from airflow_provider_kafkaspark.spark.query_stop import stop_query


class LosesFirstInterrupt:
    """A query whose thread ends only on the second stop(): each call waits for that end, as
    Spark's does."""

    def __init__(self, needed: int) -> None:
        self.calls = 0
        self.needed = needed
        self._lock = threading.Lock()
        self._ended = threading.Event()

    def stop(self) -> None:
        with self._lock:
            self.calls += 1
            if self.calls >= self.needed:
                self._ended.set()
        self._ended.wait(30)


def test_a_stop_that_took_effect_is_asked_once() -> None:
    query = LosesFirstInterrupt(needed=1)
    stop_query(cast(Any, query), repeat_s=0.05)
    assert query.calls == 1


def test_a_lost_interrupt_is_followed_by_another_stop() -> None:
    query = LosesFirstInterrupt(needed=2)
    stop_query(cast(Any, query), repeat_s=0.05)
    assert query.calls == 2


def test_the_repeats_are_bounded() -> None:
    query = LosesFirstInterrupt(needed=100)
    finisher = threading.Timer(0.5, query._ended.set)
    finisher.start()
    stop_query(cast(Any, query), repeat_s=0.01, attempts=5)
    assert query.calls == 5


def test_what_the_stop_raised_is_raised_in_the_caller() -> None:
    class Broken:
        def stop(self) -> None:
            raise RuntimeError("py4j: the JVM is gone")

    with pytest.raises(RuntimeError, match="the JVM is gone"):
        stop_query(cast(Any, Broken()), repeat_s=0.05)
