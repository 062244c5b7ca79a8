"""A test helper for the exactly-once sink's client cache (`spark.sink.clients`)."""

from __future__ import annotations

from airflow_provider_kafkaspark.spark.sink.clients import CLIENTS, fingerprint
from airflow_provider_kafkaspark.spark.sink.driver import ExactlyOnceKafkaSink


def forget_marker(sink: ExactlyOnceKafkaSink, task: int = 0) -> None:
    """Make this process's cached producer for `task` one that knows no marker (as after an
    empty task), so that its next task reads the marker through reused clients."""
    config = sink.task_config(["value"])
    txn_id, group = sink.transactional_id(task), sink.marker_group(task)
    producer_key, consumer_key = (
        fingerprint(config.producer_config),
        fingerprint(config.consumer_config),
    )
    producer, consumer = CLIENTS.take(txn_id, producer_key, group, consumer_key)
    assert producer is not None, f"no cached producer for task {task}"
    CLIENTS.put(txn_id, producer_key, producer, group, consumer_key, consumer)
