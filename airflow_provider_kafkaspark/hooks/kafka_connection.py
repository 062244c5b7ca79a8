"""The official Kafka provider's `kafka` connection (its extra is the librdkafka config dict),
read into the client config for in-process calls and the part a job spec carries to a driver.

The provider builds a client config only in a private method (`KafkaBaseHook._build_config`;
its public `get_conn` returns an AdminClient, not the config). `kafka_client_config` does by
hand what that method does, from the connection's public `extra_dejson`:
- string-valued callbacks (`error_cb`, `oauth_cb`, ...) are imported only when their dotted
  path is listed in `[apache_kafka] callback_allowlist`, the provider's own setting;
- an Amazon MSK cluster with `sasl.mechanism` OAUTHBEARER and no `oauth_cb` gets an MSK IAM
  token callback (the provider's `msk` extra, `aws-msk-iam-sasl-signer-python`);
- a Google Managed Kafka cluster gets the Google provider's token callback.
No confluent_kafka import here: operators reach this inside `execute` all the same.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from typing import Any

from airflow.sdk import BaseHook

from airflow_provider_kafkaspark.errors import InvalidInputError

# librdkafka callbacks are Python objects: they cannot travel to a Spark driver in a spec.
CALLBACK_KEYS = ("error_cb", "throttle_cb", "stats_cb", "log_cb", "oauth_cb", "on_commit")
# The Kafka provider's setting (its KAFKA_COMMON_CONFIG_SECTION, CALLBACK_ALLOWLIST_CONFIG_OPTION).
ALLOWLIST_SECTION, ALLOWLIST_OPTION = "apache_kafka", "callback_allowlist"
# The Kafka provider's MSK_BOOTSTRAP_SERVERS_REGEX (2.1), copied: its module imports
# confluent_kafka, and earlier releases do not have it. The region goes to the token signer.
MSK_BOOTSTRAP_SERVERS = re.compile(
    r"\.kafka(?:-serverless)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?(?::\d+)?(?=$|[,\s])",
    re.IGNORECASE,
)


def connection_extra(kafka_conn_id: str) -> dict[str, Any]:
    """The extra of a `kafka` connection as a dict; a typed error naming the connection when
    it is not defined or its extra is not a JSON object (the values are never shown)."""
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        conn = BaseHook.get_connection(kafka_conn_id)
    except AirflowNotFoundException as exc:
        raise InvalidInputError(
            f"Kafka connection {kafka_conn_id!r} is not defined: add it (UI, CLI or an "
            f"AIRFLOW_CONN_{str(kafka_conn_id).upper()} variable)"
        ) from exc
    raw = conn.extra
    if raw:
        try:
            parsed = json.loads(raw)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"Kafka connection {kafka_conn_id!r}: its 'extra' is not JSON "
                f"({type(exc).__name__})"
            ) from None
        if not isinstance(parsed, dict):
            raise InvalidInputError(
                f"Kafka connection {kafka_conn_id!r}: its 'extra' must be a JSON object of "
                f"client settings, got a JSON {type(parsed).__name__}"
            )
    extra = conn.extra_dejson
    if not isinstance(extra, dict):
        raise InvalidInputError(
            f"Kafka connection {kafka_conn_id!r}: its 'extra' must be a JSON object of "
            f"client settings, got {type(extra).__name__}"
        )
    return dict(extra)


def _servers(kafka_conn_id: str, extra: dict[str, Any]) -> str:
    servers = extra.get("bootstrap.servers")
    if servers is None or servers == "":
        raise InvalidInputError(
            f"Kafka connection {kafka_conn_id!r}: its extra has no 'bootstrap.servers'"
        )
    if not isinstance(servers, str) or not servers.strip():
        raise InvalidInputError(
            f"Kafka connection {kafka_conn_id!r}: 'bootstrap.servers' must be a string of "
            f"host:port entries separated by commas, got {type(servers).__name__}"
        )
    return servers


def _callback_allowlist() -> frozenset[str]:
    from airflow.sdk import conf

    listed = conf.get(ALLOWLIST_SECTION, ALLOWLIST_OPTION, fallback="") or ""
    return frozenset(path.strip() for path in listed.split(",") if path.strip())


def resolve_callbacks(kafka_conn_id: str, config: dict[str, Any]) -> None:
    """Replace the callbacks given as dotted paths by what they name, as the Kafka provider
    does: only paths listed in `[apache_kafka] callback_allowlist` (a connection's extra must
    not choose code to run). Errors name the setting and the path, never another value."""
    for key in CALLBACK_KEYS:
        path = config.get(key)
        if not isinstance(path, str):
            continue
        if path not in _callback_allowlist():
            raise InvalidInputError(
                f"Kafka connection {kafka_conn_id!r}: refusing to resolve callback "
                f"{key}={path!r}: it is not in [{ALLOWLIST_SECTION}] {ALLOWLIST_OPTION} "
                f"(AIRFLOW__{ALLOWLIST_SECTION.upper()}__{ALLOWLIST_OPTION.upper()})"
            )
        module, _, name = path.rpartition(".")
        try:
            config[key] = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise InvalidInputError(
                f"Kafka connection {kafka_conn_id!r}: callback {key}={path!r} cannot be "
                f"imported ({type(exc).__name__})"
            ) from exc


def _msk_iam_token(region: str, _oauthbearer_config: str) -> tuple[str, float]:
    """An OAUTHBEARER token for Amazon MSK IAM (librdkafka's `oauth_cb`): the signer gives its
    expiry in milliseconds, librdkafka wants seconds."""
    # An optional package (the Kafka provider's `msk` extra): not there for mypy either.
    from aws_msk_iam_sasl_signer import (  # type: ignore[import-not-found, unused-ignore]
        MSKAuthTokenProvider,
    )

    token, expiry_ms = MSKAuthTokenProvider.generate_auth_token(region)
    return token, expiry_ms / 1000


def _add_managed_token_callback(kafka_conn_id: str, config: dict[str, Any], servers: str) -> None:
    """A managed cluster's token callback, as the Kafka provider adds it; an explicit
    `oauth_cb` is kept."""
    if "managedkafka" in servers and "cloud.goog" in servers:
        try:
            from airflow.providers.google.cloud.hooks.managed_kafka import (  # type: ignore[import-not-found, unused-ignore]
                ManagedKafkaHook,
            )
        except ImportError:
            raise InvalidInputError(
                f"Kafka connection {kafka_conn_id!r} names a Google Managed Kafka cluster: "
                f"install apache-airflow-providers-google (>= 14.1) for its token"
            ) from None
        config["oauth_cb"] = ManagedKafkaHook().get_confluent_token
        return
    mechanism = config.get("sasl.mechanism") or config.get("sasl.mechanisms")
    match = MSK_BOOTSTRAP_SERVERS.search(servers)
    if mechanism != "OAUTHBEARER" or not match or "oauth_cb" in config:
        return
    try:
        import aws_msk_iam_sasl_signer  # noqa: F401
    except ImportError:
        raise InvalidInputError(
            f"Kafka connection {kafka_conn_id!r} names an Amazon MSK cluster with OAUTHBEARER: "
            f"install apache-airflow-providers-apache-kafka[msk] for its IAM token"
        ) from None
    config["oauth_cb"] = functools.partial(_msk_iam_token, match.group("region").lower())


def kafka_client_config(kafka_conn_id: str) -> dict[str, Any]:
    """The client config of a `kafka` connection, callbacks resolved (for in-process use:
    admin calls, probes, reconciliation)."""
    config = connection_extra(kafka_conn_id)
    servers = _servers(kafka_conn_id, config)
    resolve_callbacks(kafka_conn_id, config)
    _add_managed_token_callback(kafka_conn_id, config, servers)
    return config


def kafka_spec_config(kafka_conn_id: str) -> tuple[str, dict[str, str]]:
    """(bootstrap servers, the rest of the client config as strings) of a `kafka`
    connection, for a job spec: what the driver's admin client, lag commits and sink
    producers need (security settings included)."""
    extra = connection_extra(kafka_conn_id)
    servers = _servers(kafka_conn_id, extra)
    extra.pop("bootstrap.servers", None)
    for key in CALLBACK_KEYS:
        extra.pop(key, None)
    # Consumer-only settings of the connection would make producers and admin clients warn.
    for key in ("group.id", "auto.offset.reset", "enable.auto.commit"):
        extra.pop(key, None)
    return servers, {str(k): str(v) for k, v in extra.items()}
