"""A task that writes several slots (`spark/sink/shared_task.py`): how it splits its rows by
slot and how the driver completes the report (Arrow record batches built here), and the slots
written at once (`write_concurrently`): results in the slots' order, a bound on how many run, a
slot that reads no more rows, and failures that stop the other slots before they commit. Pure:
no Kafka (the integration tests in test_sink_slots.py write real slots this way)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.spark.sink.config import SLOT_INDEX_COLUMN
from airflow_provider_kafkaspark.spark.sink.driver import ExactlyOnceKafkaSink, _with_empty_slots
from airflow_provider_kafkaspark.spark.sink.shared_task import (
    index_groups,
    index_runs,
    write_concurrently,
)


def batch(*rows: tuple[int, str]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array([v.encode() for _, v in rows]), pa.array([i for i, _ in rows], pa.int32())],
        names=["value", SLOT_INDEX_COLUMN],
    )


def values(slices: Any) -> list[str]:
    return [v.decode() for s in slices for v in s.column("value").to_pylist()]


def test_runs_split_at_each_change_of_index_within_and_across_batches() -> None:
    batches = [batch((3, "a"), (3, "b"), (0, "c")), batch(), batch((0, "d"), (5, "e"))]
    runs = [(index, values([s])) for index, s in index_runs(batches)]
    assert runs == [(3, ["a", "b"]), (0, ["c"]), (0, ["d"]), (5, ["e"])]


def test_groups_join_the_runs_of_one_index_even_when_a_group_is_left_unread() -> None:
    batches = [batch((3, "a"), (0, "b")), batch((0, "c"), (0, "d"), (5, "e"))]
    groups = index_groups(batches)
    index, _unread = next(groups)  # a slot that committed before: its rows are never read
    assert index == 3
    index, slices = next(groups)
    assert (index, values(slices)) == (0, ["b", "c", "d"])
    index, slices = next(groups)
    assert (index, values(slices)) == (5, ["e"])
    assert next(groups, None) is None


def test_an_index_that_comes_back_is_refused() -> None:
    batches = [batch((1, "a"), (2, "b")), batch((1, "c"))]
    with pytest.raises(RuntimeError, match="task index 1 came in two runs"):
        for _, slices in index_groups(batches):
            values(slices)


def test_slots_without_rows_are_reported_empty_in_slot_order() -> None:
    written = {"task": 2, "status": "written", "rows": 5, "seconds": 0.1}
    results = _with_empty_slots([written], 4)
    assert [(r["task"], r["status"], r["rows"]) for r in results] == [
        (0, "empty", 0),
        (1, "empty", 0),
        (2, "written", 5),
        (3, "empty", 0),
    ]


@pytest.mark.parametrize("bad", [-1, True, 1.5, "2"])
def test_max_tasks_must_be_a_non_negative_integer(bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="max_tasks"):
        ExactlyOnceKafkaSink(
            producer_config={"bootstrap.servers": "127.0.0.1:9"},
            topic="out",
            sink_id="s",
            query_id="q",
            max_tasks=bad,
        )


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
