"""What the verbs take: the bootstrap list ordered live first, `if_running` checked once."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kafkaspark.core.spec.jobspec import JobSpecError
from airflow_provider_kafkaspark.errors import InvalidArgumentError
from airflow_provider_kafkaspark.lifecycle.inputs import (
    IF_RUNNING,
    check_if_running,
    job_spec_of,
    live_first,
)


def test_live_first_moves_dead_entries_last_and_keeps_the_rest_in_order() -> None:
    servers = "a:9092, b:9092,c:9092,d:9092"
    assert live_first(servers, ["a:9092", "c:9092"]) == "b:9092,d:9092,a:9092,c:9092"


def test_live_first_without_dead_entries_only_normalises_spacing() -> None:
    assert live_first("a:1, b:2", []) == "a:1,b:2"


def test_if_running_is_one_of_its_choices() -> None:
    assert [check_if_running(v) for v in IF_RUNNING] == ["fail", "skip", "replace"]
    with pytest.raises(InvalidArgumentError, match="if_running='restart' is not one of"):
        check_if_running("restart")


def test_a_job_spec_is_read_from_a_dict_or_its_json_alike() -> None:
    raw = {
        "job_name": "orders",
        "source": {"bootstrap_servers": "localhost:9092", "subscribe": ["in"]},
        "sink": {"kind": "kafka_exactly_once", "topic": "out"},
        "checkpoint_location": "/tmp/cp",
    }
    assert job_spec_of(raw) == job_spec_of(json.dumps(raw))
    with pytest.raises(JobSpecError):
        job_spec_of({"job_name": "orders"})
