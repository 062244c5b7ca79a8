"""The checks of the batch's columns and of the settings (`spark/sink/schema.py`)."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.spark.sink.schema import connection_settings, sink_columns


def test_value_only_and_all_columns_in_a_fixed_order() -> None:
    assert sink_columns([("value", "string")]) == ["value"]
    fields = [
        ("headers", "array<struct<key:string,value:binary>>"),
        ("partition", "int"),
        ("extra", "double"),
        ("key", "binary"),
        ("value", "binary"),
    ]
    assert sink_columns(fields) == ["value", "key", "partition", "headers"]
    assert sink_columns([("value", "string"), ("key", "void")]) == ["value", "key"]


def test_missing_value_names_the_column() -> None:
    with pytest.raises(InvalidInputError, match="no `value` column") as info:
        sink_columns([("payload", "string"), ("key", "string")])
    assert "payload" in str(info.value)


def test_value_with_wrong_case_gets_a_hint() -> None:
    with pytest.raises(InvalidInputError, match="found 'Value'"):
        sink_columns([("Value", "string")])


@pytest.mark.parametrize(
    ("fields", "column"),
    [
        ([("value", "int")], "`value` is int"),
        ([("value", "string"), ("key", "int")], "`key` is int"),
        ([("value", "string"), ("partition", "string")], "`partition` is string"),
        ([("value", "string"), ("headers", "map<string,string>")], "`headers` is map"),
        ([("value", "string"), ("topic", "string")], "`topic` is not supported"),
    ],
)
def test_bad_column_types_name_the_column(fields: list[tuple[str, str]], column: str) -> None:
    with pytest.raises(InvalidInputError, match=column):
        sink_columns(fields)


def test_connection_settings_keep_security_drop_tuning() -> None:
    config = {
        "bootstrap.servers": "b:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "ssl.ca.location": "/ca.pem",
        "acks": "all",
        "linger.ms": 10,
        "compression.type": "lz4",
    }
    assert connection_settings(config) == {
        "bootstrap.servers": "b:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "ssl.ca.location": "/ca.pem",
    }
