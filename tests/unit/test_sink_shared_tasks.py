"""Several slots in one Spark task (a coalesced batch): how a task splits its rows by slot, and
how the driver completes the report. Pure: Arrow record batches built here, no Kafka."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.spark.sink.config import SLOT_INDEX_COLUMN
from airflow_provider_kafkaspark.spark.sink.driver import ExactlyOnceKafkaSink, _with_empty_slots
from airflow_provider_kafkaspark.spark.sink.shared_task import index_groups, index_runs


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
