"""The exactly-once sink's checks of what it is given: the batch's columns, names, settings.

All of them run on the driver, before any task starts. Messages name keys, never values:
client configs may hold passwords.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_kafkaspark.errors import InvalidInputError

# Settings the marker consumer takes over from producer_config: how to reach and log in to
# the cluster. Producer-only settings (acks, linger.ms, ...) would only make librdkafka warn.
CONNECTION_KEYS = (
    "bootstrap.servers",
    "security.protocol",
    "client.id",
    "client.dns.lookup",
    "client.rack",
    "broker.address.family",
    "socket.",
    "sasl.",
    "ssl.",
    "ssl_",
    "enable.ssl.certificate.verification",
    "oauthbearer",
    "https.",
    "metadata.max.age.ms",
    "topic.metadata.",
    "reconnect.",
    "connections.max.idle.ms",
    "api.version",
    "broker.version.fallback",
)

# Settings the sink owns: they make the protocol work and must not be overridden.
OWNED_PRODUCER_KEYS = ("transactional.id", "transaction.timeout.ms")
OWNED_CONSUMER_KEYS = ("group.id", "enable.auto.commit", "isolation.level")

_NAME_RE = re.compile(r"^[A-Za-z0-9._-]+$")

_TEXT_TYPES = ("string", "binary")
_INT_TYPES = ("tinyint", "smallint", "int", "bigint")
_HEADERS_TYPE = "array<struct<key:string,value:binary>>"


def sink_columns(fields: Sequence[tuple[str, str]]) -> list[str]:
    """The columns to send to the tasks, `value` first, from (name, Spark type) pairs.

    Types are Spark's `DataType.simpleString()` names. Raises InvalidInputError naming the
    missing or bad column.
    """
    types = {name: type_name for name, type_name in fields}
    if "value" not in types:
        hint = ""
        near = [n for n in types if n.lower() == "value"]
        if near:
            hint = f" (found {near[0]!r}; column names are case-sensitive here)"
        raise InvalidInputError(
            "the batch DataFrame has no `value` column: the Kafka sink needs `value` "
            f"(string or binary){hint}; columns are {sorted(types) or 'none'}"
        )
    if types["value"] not in _TEXT_TYPES:
        raise InvalidInputError(
            f"column `value` is {types['value']}, the Kafka sink needs string or binary: "
            "cast it, e.g. CAST(value AS STRING) or to_json(struct(*)) AS value"
        )
    columns = ["value"]
    if "key" in types:
        if types["key"] not in (*_TEXT_TYPES, "void"):
            raise InvalidInputError(
                f"column `key` is {types['key']}, the Kafka sink needs string, binary or null"
            )
        columns.append("key")
    if "partition" in types:
        if types["partition"] not in _INT_TYPES:
            raise InvalidInputError(
                f"column `partition` is {types['partition']}, the Kafka sink needs an integer"
            )
        columns.append("partition")
    if "headers" in types:
        if types["headers"] != _HEADERS_TYPE:
            raise InvalidInputError(
                f"column `headers` is {types['headers']}, the Kafka sink needs {_HEADERS_TYPE}"
            )
        columns.append("headers")
    if "topic" in types:
        raise InvalidInputError(
            "column `topic` is not supported: the exactly-once sink writes only to its "
            "configured topic; drop the column or use one sink per topic"
        )
    return columns


def check_name(what: str, value: str) -> str:
    """`value`, if it is usable in a transactional.id and a group name; else raises."""
    if not isinstance(value, str) or not _NAME_RE.match(value):
        raise InvalidInputError(
            f"{what} {value!r} must be a non-empty string of letters, digits, '.', '_' or '-'"
        )
    return value


def plain_config(what: str, config: Mapping[str, Any], owned: Sequence[str]) -> dict[str, Any]:
    """A copy of `config` that pickles and names no setting the sink owns.

    Messages name keys, never values: configs may hold passwords.
    """
    plain: dict[str, Any] = {}
    for key, value in config.items():
        if not isinstance(key, str):
            raise InvalidInputError(f"{what}: setting names must be strings, got {key!r}")
        if key in owned:
            raise InvalidInputError(
                f"{what}: `{key}` is set by the exactly-once sink itself; remove it "
                "(transaction.timeout.ms is the sink's transaction_timeout_ms argument)"
            )
        if not isinstance(value, str | int | float | bool):
            raise InvalidInputError(
                f"{what}: `{key}` must be a string, number or boolean (callbacks and "
                "objects cannot be shipped to executors)"
            )
        plain[key] = value
    return plain


def connection_settings(producer_config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of `producer_config` that say how to reach and log in to the cluster."""
    return {k: v for k, v in producer_config.items() if k.startswith(CONNECTION_KEYS)}
