"""Connections in: the official providers' `kafka` connection (its extra is the librdkafka
config dict) and, for cluster managers, the `spark` connection.

Imported by operators inside `execute`, never at DAG parse time (the official Kafka hook
imports confluent_kafka at module level).
"""

from __future__ import annotations

from typing import Any

from airflow_provider_kafkaspark.errors import InvalidInputError

# librdkafka callbacks are Python objects: they cannot travel to a Spark driver in a spec.
_CALLBACK_KEYS = ("error_cb", "throttle_cb", "stats_cb", "log_cb", "oauth_cb", "on_commit")


def kafka_client_config(kafka_conn_id: str) -> dict[str, Any]:
    """The client config of a `kafka` connection, callbacks resolved (for in-process use:
    admin calls, probes, reconciliation)."""
    from airflow.providers.apache.kafka.hooks.base import KafkaBaseHook

    try:
        hook = KafkaBaseHook(kafka_conn_id)  # type: ignore[no-untyped-call]
        return dict(hook._build_config())
    except ValueError as exc:
        raise InvalidInputError(f"Kafka connection {kafka_conn_id!r}: {exc}") from exc


def kafka_spec_config(kafka_conn_id: str) -> tuple[str, dict[str, str]]:
    """(bootstrap servers, the rest of the client config as strings) of a `kafka`
    connection, for a job spec: what the driver's admin client, lag commits and sink
    producers need (security settings included)."""
    from airflow.sdk import BaseHook

    extra = dict(BaseHook.get_connection(kafka_conn_id).extra_dejson)
    servers = extra.pop("bootstrap.servers", None)
    if not servers:
        raise InvalidInputError(
            f"Kafka connection {kafka_conn_id!r}: its extra has no 'bootstrap.servers'"
        )
    for key in _CALLBACK_KEYS:
        extra.pop(key, None)
    # Consumer-only settings of the connection would make producers and admin clients warn.
    for key in ("group.id", "auto.offset.reset", "enable.auto.commit"):
        extra.pop(key, None)
    return str(servers), {str(k): str(v) for k, v in extra.items()}
