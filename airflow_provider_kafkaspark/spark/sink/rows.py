"""Executor side: the rows of an exactly-once sink task, from Spark's form to `produce()`.

A row is a tuple in the task's `columns` order (`value` first, then `key`, `partition`,
`headers` when the batch has them), with binary values as bytes and headers as (key, value)
pairs, whether it came from an Arrow record batch (`mapInArrow`, see `arrow_rows`) or as a
pickled Row (`mapPartitionsWithIndex`, see `plain_rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any


def as_bytes(value: Any) -> bytes | str | None:
    # pyspark gives binary columns as bytearray; librdkafka wants bytes (or str).
    if value is None or isinstance(value, bytes | str):
        return value
    return bytes(value)


def positional(columns: Sequence[str]) -> bool:
    """Whether a row tuple is already the positional arguments of `produce(topic, ...)`:
    `produce(topic, value, key)` takes value and key in that order. The common case, and
    the fast one: no keyword dict per row."""
    return tuple(columns) in (("value",), ("value", "key"))


def produce_arguments(columns: Sequence[str]) -> Callable[[Sequence[Any]], dict[str, Any]]:
    """A function from a row tuple to the keyword arguments of its `Producer.produce` call,
    for rows with `partition` or `headers` (see `positional`).

    A null or absent `partition` leaves the choice to the producer's partitioner.
    """
    key_at = columns.index("key") if "key" in columns else None
    partition_at = columns.index("partition") if "partition" in columns else None
    headers_at = columns.index("headers") if "headers" in columns else None

    def arguments(row: Sequence[Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"value": row[0]}
        if key_at is not None:
            kwargs["key"] = row[key_at]
        if partition_at is not None and row[partition_at] is not None:
            kwargs["partition"] = int(row[partition_at])
        if headers_at is not None and row[headers_at] is not None:
            kwargs["headers"] = row[headers_at]
        return kwargs

    return arguments


def plain_rows(rows: Iterable[Sequence[Any]], columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    """Pickled Rows (`mapPartitionsWithIndex`) as the tuples `arrow_rows` gives: binary
    values as bytes rather than bytearray, headers as (key, value) pairs."""
    headers_at = columns.index("headers") if "headers" in columns else None
    binary = [i for i, name in enumerate(columns) if name in ("value", "key")]
    for row in rows:
        plain = list(row[: len(columns)])
        for i in binary:
            plain[i] = as_bytes(plain[i])
        if headers_at is not None and plain[headers_at] is not None:
            plain[headers_at] = [(h[0], as_bytes(h[1])) for h in plain[headers_at]]
        yield tuple(plain)


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
