"""Backfill runs its batch driver through a backend, as a streaming job's driver starts."""

from __future__ import annotations

from airflow_provider_kafkaspark.backends import deployment_backend
from airflow_provider_kafkaspark.backends.base import BatchBackend
from airflow_provider_kafkaspark.backends.yarn import YarnBackend


def test_the_local_backends_run_a_batch_driver_and_yarn_does_not() -> None:
    assert isinstance(deployment_backend("local[2]"), BatchBackend)
    assert isinstance(deployment_backend("spark://h:7077"), BatchBackend)
    assert not isinstance(YarnBackend(), BatchBackend)
