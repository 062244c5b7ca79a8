"""Offsets algebra: the Kafka source's `{"topic": {"0": 23}}` form and the types around it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from airflow_provider_kafkaspark.errors import InvalidInputError

# topic -> partition -> offset (the next offset to read, as Spark stores it)
TopicOffsets = dict[str, dict[int, int]]


@dataclass(frozen=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class Watermarks:
    """Kafka's earliest available offset (`low`) and end offset (`high`) of a partition."""

    low: int
    high: int

    @property
    def size(self) -> int:
        return max(0, self.high - self.low)


def parse_kafka_offsets(
    text: str | Mapping[str, object], *, where: str = "offsets"
) -> TopicOffsets:
    """Parse Spark's Kafka offsets JSON; `where` names the source in errors."""
    raw: object
    if isinstance(text, str):
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{where}: not JSON ({exc.msg} at char {exc.pos})") from exc
    else:
        raw = text
    if not isinstance(raw, dict):
        raise InvalidInputError(f"{where}: expected an object of topics, got {type(raw).__name__}")
    result: TopicOffsets = {}
    for topic, partitions in raw.items():
        if not isinstance(topic, str) or not topic:
            raise InvalidInputError(f"{where}: bad topic name {topic!r}")
        if not isinstance(partitions, dict):
            raise InvalidInputError(
                f"{where}: topic {topic!r} maps to {partitions!r}, not partitions"
            )
        parsed: dict[int, int] = {}
        for part, offset in partitions.items():
            try:
                p = int(part)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"{where}: topic {topic!r} has partition {part!r}") from exc
            if p < 0 or isinstance(offset, bool) or not isinstance(offset, int):
                raise InvalidInputError(
                    f"{where}: topic {topic!r} partition {part!r} has offset {offset!r}"
                )
            parsed[p] = offset
        result[topic] = parsed
    return result


def offsets_json(offsets: Mapping[str, Mapping[int, int]]) -> dict[str, dict[str, int]]:
    """The JSON-ready form, partitions as strings, in order (manifests, reports, XCom)."""
    return {t: {str(p): o for p, o in sorted(ps.items())} for t, ps in sorted(offsets.items())}


def format_kafka_offsets(offsets: Mapping[str, Mapping[int, int]]) -> str:
    """The JSON Spark's `startingOffsets`/`endingOffsets` options take."""
    return json.dumps(offsets_json(offsets), separators=(",", ":"))


def flatten(offsets: Mapping[str, Mapping[int, int]]) -> dict[TopicPartition, int]:
    return {TopicPartition(t, p): o for t, ps in offsets.items() for p, o in ps.items()}


def nest(flat: Iterable[tuple[TopicPartition, int]]) -> TopicOffsets:
    result: TopicOffsets = {}
    for tp, offset in flat:
        result.setdefault(tp.topic, {})[tp.partition] = offset
    return result


def total_records(
    start: Mapping[str, Mapping[int, int]], end: Mapping[str, Mapping[int, int]]
) -> int:
    """Records between two positions, over the partitions both know (negative spans count 0)."""
    a, b = flatten(start), flatten(end)
    return sum(max(0, b[tp] - a[tp]) for tp in a.keys() & b.keys())


def records_by_topic(
    start: Mapping[str, Mapping[int, int]], end: Mapping[str, Mapping[int, int]]
) -> dict[str, int]:
    """`total_records` per topic of `start` (a checkpoint's committed offsets: its lag per
    topic, where `end` is Kafka's end offsets), topics in order."""
    return {
        topic: total_records({topic: partitions}, end)
        for topic, partitions in sorted(start.items())
    }
