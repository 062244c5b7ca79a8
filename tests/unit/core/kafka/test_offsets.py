"""The Kafka offsets JSON form Spark uses, and the algebra over it."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kafkaspark.core.kafka.offsets import (
    TopicPartition,
    flatten,
    format_kafka_offsets,
    nest,
    parse_kafka_offsets,
    total_records,
)
from airflow_provider_kafkaspark.errors import InvalidInputError


def test_parse_and_format_round_trip() -> None:
    text = '{"b":{"1":5,"0":7},"a":{"0":-2}}'
    parsed = parse_kafka_offsets(text)
    assert parsed == {"a": {0: -2}, "b": {0: 7, 1: 5}}
    assert format_kafka_offsets(parsed) == '{"a":{"0":-2},"b":{"0":7,"1":5}}'
    assert parse_kafka_offsets(format_kafka_offsets(parsed)) == parsed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ("[1]", "expected an object of topics"),
        ('{"t": 5}', "maps to 5"),
        ('{"t": {"x": 1}}', "partition 'x'"),
        ('{"t": {"-1": 1}}', "partition '-1'"),
        ('{"t": {"0": "1"}}', "offset '1'"),
        ('{"t": {"0": true}}', "offset True"),
        ('{"": {"0": 1}}', "bad topic name"),
    ],
)
def test_bad_offsets_name_the_source(text: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match="startingOffsets") as err:
        parse_kafka_offsets(text, where="startingOffsets")
    assert message in str(err.value)


def test_flatten_nest_and_totals() -> None:
    offsets = {"t": {0: 10, 1: 20}, "u": {0: 1}}
    flat = flatten(offsets)
    assert flat[TopicPartition("t", 1)] == 20 and str(TopicPartition("t", 1)) == "t-1"
    assert nest(flat.items()) == offsets
    later = {"t": {0: 15, 1: 20, 2: 99}, "u": {0: 0}}
    # Only partitions both know count; a backwards move counts as 0, not negative.
    assert total_records(offsets, later) == 5
    assert json.loads(format_kafka_offsets({})) == {}
