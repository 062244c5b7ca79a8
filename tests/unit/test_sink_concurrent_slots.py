"""The slots of a shared task written at once (`sink_shared_task.write_concurrently`): results
in the slots' order, a bound on how many run, a slot that reads no more rows, and failures
that stop the other slots before they commit. Pure: threads and a stand-in for the slot's
write, no Kafka (the integration tests in test_sink_slots.py write real slots this way)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_provider_kafkaspark.spark.sink.shared_task import write_concurrently

WAIT_S = 5.0


def groups(*sizes: int) -> list[tuple[int, list[str]]]:
    return [(index, [f"{index}:{i}" for i in range(size)]) for index, size in enumerate(sizes)]


def test_every_slot_gets_all_its_rows_and_results_keep_the_slots_order() -> None:
    def write(index: int, rows: Iterator[Any]) -> dict[str, Any]:
        got = list(rows)
        time.sleep(0.01 * (3 - index))  # later slots finish first
        return {"task": index, "rows": got}

    results = write_concurrently(groups(3, 0, 25, 1), write, concurrency=3)
    assert [r["task"] for r in results] == [0, 1, 2, 3]
    assert [len(r["rows"]) for r in results] == [3, 0, 25, 1]
    assert results[2]["rows"] == [f"2:{i}" for i in range(25)]


def test_a_slot_starts_while_the_one_before_is_still_writing() -> None:
    second_started = threading.Event()

    def write(index: int, rows: Iterator[Any]) -> dict[str, Any]:
        list(rows)
        if index == 0:
            # The first slot commits only once the second has begun: serial slots would fail.
            assert second_started.wait(WAIT_S), "slot 1 did not start while slot 0 was open"
        else:
            second_started.set()
        return {"task": index}

    assert [r["task"] for r in write_concurrently(groups(2, 2), write)] == [0, 1]


def test_no_more_slots_run_at_once_than_allowed() -> None:
    lock = threading.Lock()
    running = 0
    most = 0

    def write(index: int, rows: Iterator[Any]) -> dict[str, Any]:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        list(rows)
        time.sleep(0.02)
        with lock:
            running -= 1
        return {"task": index}

    results = write_concurrently(groups(*[2] * 9), write, concurrency=2)
    assert len(results) == 9
    assert most == 2


def test_a_slot_that_reads_no_more_rows_does_not_hold_up_the_others() -> None:
    # A slot whose marker says it committed before reads its first row only; the feeder
    # must move on although that slot's queue stays full.
    def write(index: int, rows: Iterator[Any]) -> dict[str, Any]:
        if index == 0:
            return {"task": index, "rows": [next(rows)]}
        return {"task": index, "rows": list(rows)}

    results = write_concurrently(groups(50, 4), write)
    assert results == [
        {"task": 0, "rows": ["0:0"]},
        {"task": 1, "rows": ["1:0", "1:1", "1:2", "1:3"]},
    ]


def test_a_failed_slot_fails_the_task_and_stops_the_slots_still_reading() -> None:
    committed: list[int] = []
    slot_1_reading = threading.Event()

    def write(index: int, rows: Iterator[Any]) -> dict[str, Any]:
        if index == 0:
            next(rows)
            assert slot_1_reading.wait(WAIT_S)
            raise RuntimeError("fenced for good")
        slot_1_reading.set()
        for _ in rows:  # slot 1's rows keep coming until the failure stops them
            pass
        committed.append(index)
        return {"task": index}

    endless = (f"1:{i}" for i in range(10**9))
    with pytest.raises(RuntimeError, match="fenced for good"):
        write_concurrently([(0, ["0:0", "0:1"]), (1, endless), (2, ["2:0"])], write)
    assert committed == []


def test_a_failure_reading_the_rows_stops_every_open_slot() -> None:
    stopped: list[str] = []

    def write(index: int, rows: Iterator[Any]) -> dict[str, Any]:
        try:
            list(rows)
        except RuntimeError as exc:
            stopped.append(str(exc))
            raise
        return {"task": index}

    def failing() -> Iterator[str]:
        yield "0:0"
        raise RuntimeError("the Arrow stream broke")

    with pytest.raises(RuntimeError, match="the Arrow stream broke"):
        write_concurrently([(0, failing())], write)
    assert len(stopped) == 1
    assert "not committed" in stopped[0]


def test_concurrency_must_be_positive() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        write_concurrently([], lambda index, rows: {}, concurrency=0)
