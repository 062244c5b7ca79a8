"""Rows, from Arrow record batches or pickled Rows, to `produce()` arguments
(`spark/sink/rows.py`)."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.spark.sink.rows import (
    arrow_rows,
    plain_rows,
    positional,
    produce_arguments,
)


def test_arrow_batches_become_the_row_tuples_the_rdd_path_gives() -> None:
    pa = pytest.importorskip("pyarrow")
    headers_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array([b"a", None], pa.binary()),
            pa.array(["k", None]),
            pa.array([2, None], pa.int32()),
            pa.array([[{"key": "h", "value": b"1"}], None], headers_type),
        ],
        names=["value", "key", "partition", "headers"],
    )
    columns = ("value", "key", "partition", "headers")
    assert list(arrow_rows([batch, batch.slice(0, 1)], columns)) == [
        (b"a", "k", 2, [("h", b"1")]),
        (None, None, None, None),
        (b"a", "k", 2, [("h", b"1")]),
    ]
    # Only the configured columns, in their order.
    assert list(arrow_rows([batch], ("value",))) == [(b"a",), (None,)]


def test_pickled_rows_become_plain_tuples_and_produce_arguments() -> None:
    columns = ("value", "key", "partition", "headers")
    pickled = (bytearray(b"v"), bytearray(b"k"), 2, [("h", bytearray(b"1")), ("e", None)])
    [row] = plain_rows([pickled], columns)
    # librdkafka takes bytes or str, not the bytearray pyspark gives binary columns as.
    assert type(row[0]) is bytes and type(row[1]) is bytes and type(row[3][0][1]) is bytes
    assert produce_arguments(columns)(row) == {
        "value": b"v",
        "key": b"k",
        "partition": 2,
        "headers": [("h", b"1"), ("e", None)],
    }
    # A null partition leaves the choice to the partitioner; null headers send none.
    [empty] = plain_rows([(None, None, None, None)], columns)
    assert produce_arguments(columns)(empty) == {"value": None, "key": None}
    # Value and key alone go to produce() as they are, positionally.
    assert positional(("value",)) and positional(("value", "key"))
    assert not positional(("value", "key", "partition")) and not positional(("value", "headers"))
