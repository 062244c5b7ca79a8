"""Lifecycle control for Spark Structured Streaming jobs that read Kafka, for Airflow."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def get_provider_info() -> dict[str, Any]:
    """What Airflow's ProvidersManager reads through the `apache_airflow_provider` entry point."""
    return {
        "package-name": "airflow-provider-kafkaspark",
        "name": "Kafka Spark Streaming lifecycle",
        "description": "Submit, watch, stop with savepoint, restore, reconcile and backfill "
        "Spark Structured Streaming jobs that read Kafka.",
        "versions": [__version__],
    }
