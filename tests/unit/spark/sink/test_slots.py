"""`sink_slots._range_start`: a Kafka offset range's (topic, partition, first offset) from its
printed form, and from its fields when the form is not the known one. The real objects are
read in tests/integration/test_sink_slots.py."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from airflow_provider_kafkaspark.spark.sink.slots import _range_start


@dataclass
class _TopicPartition:
    name: str
    number: int

    def topic(self) -> str:
        return self.name

    def partition(self) -> int:
        return self.number


@dataclass
class _OffsetRange:
    printed: str
    tp: _TopicPartition
    start: int

    def toString(self) -> str:
        return self.printed

    def topicPartition(self) -> _TopicPartition:
        return self.tp

    def fromOffset(self) -> int:
        return self.start


@pytest.mark.parametrize(
    ("printed", "expected"),
    [
        ("KafkaOffsetRange(in-3,0,100,None)", ("in", 3, 0)),
        # Dashes and digits in the topic name: the partition is after the last dash.
        (
            "KafkaOffsetRange(orders-2024-v2-11,4200,4300,Some(executor-1))",
            ("orders-2024-v2", 11, 4200),
        ),
        ("KafkaOffsetRange(a.b_c-0,-2,-1,None)", ("a.b_c", 0, -2)),
    ],
)
def test_the_printed_form_gives_topic_partition_and_first_offset(
    printed: str, expected: tuple[str, int, int]
) -> None:
    # The fields disagree on purpose: only the printed form may have been read.
    offset_range = _OffsetRange(printed, _TopicPartition("other", 99), 99)
    assert _range_start(offset_range) == expected


def test_an_unknown_printed_form_falls_back_to_the_fields() -> None:
    offset_range = _OffsetRange("OffsetRange[in:3 from 0]", _TopicPartition("in", 3), 7)
    assert _range_start(offset_range) == ("in", 3, 7)
