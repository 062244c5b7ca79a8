"""Which Spark releases warn once per Kafka record a Python task reads (`consumer_warning`);
the logger's level after a real query is checked on both releases in
tests/integration/test_kafka_sink.py."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.spark.sink.consumer_warning import warns_per_record


@pytest.mark.parametrize(
    ("version", "warns"),
    [
        ("3.5.7", True),
        ("3.5.3", True),
        ("3.3.0", True),
        ("4.0.0", False),
        ("4.1.0-preview1", False),
        ("", False),
        ("dev", False),
    ],
)
def test_only_releases_before_4_warn_per_record(version: str, warns: bool) -> None:
    assert warns_per_record(version) is warns
