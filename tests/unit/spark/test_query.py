"""The query's plan: an author's function that fails while the plan is built is a bad job."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.spark.query import transformed

SPEC = JobSpec.from_dict(
    {
        "job_name": "clicks",
        "source": {"bootstrap_servers": "k:9092", "subscribe": ["in"]},
        "sink": {"kind": "console"},
        "checkpoint_location": "/tmp/clicks",
        "transformation": "clicks_job:transform",
    }
)


def broken(source: Any) -> Any:
    raise RuntimeError("this release is broken")


class Py4JNetworkError(Exception):
    """Stands for py4j's own: the JVM went away, not the author's code."""


Py4JNetworkError.__module__ = "py4j.protocol"
# What the function is given; a plain object stands for the source DataFrame.
SOURCE: Any = object()


def test_the_authors_exception_names_the_field_and_the_cause() -> None:
    with pytest.raises(InvalidInputError, match="this release is broken") as failed:
        transformed(SPEC, broken, SOURCE)
    assert "'transformation': clicks_job:transform failed" in str(failed.value)


def test_a_jvm_failure_stays_a_crash() -> None:
    def jvm_gone(source: Any) -> Any:
        raise Py4JNetworkError("Answer from Java side is empty")

    with pytest.raises(Py4JNetworkError):
        transformed(SPEC, jvm_gone, SOURCE)


def test_a_working_function_returns_its_plan() -> None:
    plan: Any = ("plan",)
    assert transformed(SPEC, lambda source: plan, SOURCE) is plan
