"""Executor side: the rows of an exactly-once sink task, from Spark's form to `produce()`.

A row is a tuple in the task's `columns` order (`value` first, then `key`, `partition`,
`headers` when the batch has them), whether it came as a pickled Row
(`mapPartitionsWithIndex`) or from an Arrow record batch (`mapInArrow`, see `arrow_rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any


def as_bytes(value: Any) -> bytes | str | None:
    # pyspark gives binary columns as bytearray; librdkafka wants bytes (or str).
    if value is None or isinstance(value, bytes | str):
        return value
    return bytes(value)


def produce_arguments(columns: Sequence[str]) -> Callable[[Sequence[Any]], dict[str, Any]]:
    """A function from a row tuple to the keyword arguments of its `Producer.produce` call.

    A null or absent `partition` leaves the choice to the producer's partitioner.
    """
    key_at = columns.index("key") if "key" in columns else None
    partition_at = columns.index("partition") if "partition" in columns else None
    headers_at = columns.index("headers") if "headers" in columns else None

    def arguments(row: Sequence[Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"value": as_bytes(row[0])}
        if key_at is not None:
            kwargs["key"] = as_bytes(row[key_at])
        if partition_at is not None and row[partition_at] is not None:
            kwargs["partition"] = int(row[partition_at])
        if headers_at is not None and row[headers_at] is not None:
            kwargs["headers"] = [(h[0], as_bytes(h[1])) for h in row[headers_at]]
        return kwargs

    return arguments


def arrow_rows(batches: Iterable[Any], columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    """Row tuples in `columns` order, as the RDD path gives them (headers as pairs)."""
    headers_at = columns.index("headers") if "headers" in columns else None
    for batch in batches:
        values = [batch.column(name).to_pylist() for name in columns]
        if headers_at is not None:
            values[headers_at] = [
                None if headers is None else [(h["key"], h["value"]) for h in headers]
                for headers in values[headers_at]
            ]
        yield from zip(*values, strict=True)
