"""`KafkaSparkHook`: connections in. The official providers' `kafka` connection (its extra is
the librdkafka config dict) and, for cluster managers, their `spark` connection; this provider
defines no connection type of its own.

Imported by operators inside `execute`, never at DAG parse time (the official Kafka hook
imports confluent_kafka at module level).
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from airflow.sdk import BaseHook

from airflow_provider_kafkaspark.errors import InvalidInputError

# librdkafka callbacks are Python objects: they cannot travel to a Spark driver in a spec.
_CALLBACK_KEYS = ("error_cb", "throttle_cb", "stats_cb", "log_cb", "oauth_cb", "on_commit")


def _connection_extra(kafka_conn_id: str) -> dict[str, Any]:
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


def _kafka_client_config(kafka_conn_id: str) -> dict[str, Any]:
    """The client config of a `kafka` connection, callbacks resolved (for in-process use:
    admin calls, probes, reconciliation)."""
    from airflow.providers.apache.kafka.hooks.base import KafkaBaseHook

    # Checked first: the official hook fails on these with untyped errors.
    _servers(kafka_conn_id, _connection_extra(kafka_conn_id))
    try:
        hook = KafkaBaseHook(kafka_conn_id)  # type: ignore[no-untyped-call]
        return dict(hook._build_config())
    except (ValueError, TypeError, AttributeError) as exc:
        raise InvalidInputError(f"Kafka connection {kafka_conn_id!r}: {exc}") from exc


def _kafka_spec_config(kafka_conn_id: str) -> tuple[str, dict[str, str]]:
    """(bootstrap servers, the rest of the client config as strings) of a `kafka`
    connection, for a job spec: what the driver's admin client, lag commits and sink
    producers need (security settings included)."""
    extra = _connection_extra(kafka_conn_id)
    servers = _servers(kafka_conn_id, extra)
    extra.pop("bootstrap.servers", None)
    for key in _CALLBACK_KEYS:
        extra.pop(key, None)
    # Consumer-only settings of the connection would make producers and admin clients warn.
    for key in ("group.id", "auto.offset.reset", "enable.auto.commit"):
        extra.pop(key, None)
    return servers, {str(k): str(v) for k, v in extra.items()}


# -- the `aws` connection ---------------------------------------------------------------------
# An official-provider `aws` connection, read for checkpoints and savepoints on S3.
#
# The fields are the Amazon provider's: login = access key id, password = secret access key;
# in the extra `aws_session_token`, `region_name`, and the endpoint of an S3-compatible store
# as `endpoint_url` or `service_config.s3.endpoint_url`. A connection without a login leaves
# credentials to the default chain (instance profile, the AWS variables), as the Amazon
# provider does. Read by hand (about twenty lines) rather than through the Amazon provider's
# `AwsConnectionWrapper`, which would add that provider and boto3 as dependencies; unlike it,
# this does not assume roles (`role_arn`) or read profiles from a credentials file.


@dataclass(frozen=True)
class AwsStorage:
    """What one `aws` connection gives: s3fs options for this process, and the standard AWS
    variables for a driver process (which S3A and s3fs there both read). `repr` hides both:
    they hold the secret key."""

    s3fs_options: dict[str, Any] = field(repr=False)
    driver_env: dict[str, str] = field(repr=False)


def aws_storage(aws_conn_id: str) -> AwsStorage:
    """Read an `aws` connection; errors name the connection and the field, never a value."""
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        conn = BaseHook.get_connection(aws_conn_id)
    except AirflowNotFoundException as exc:
        raise InvalidInputError(
            f"AWS connection {aws_conn_id!r} is not defined: add it (UI, CLI or an "
            f"AIRFLOW_CONN_{str(aws_conn_id).upper()} variable)"
        ) from exc
    try:
        extra = json.loads(conn.extra) if conn.extra else {}
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"AWS connection {aws_conn_id!r}: its 'extra' is not JSON"
        ) from None
    if not isinstance(extra, dict):
        raise InvalidInputError(f"AWS connection {aws_conn_id!r}: its 'extra' must be an object")
    service = extra.get("service_config", {})
    s3_service = service.get("s3", {}) if isinstance(service, dict) else {}
    endpoint = (s3_service if isinstance(s3_service, dict) else {}).get(
        "endpoint_url"
    ) or extra.get("endpoint_url")
    region = extra.get("region_name")
    token = extra.get("aws_session_token")
    for name, value in (("endpoint_url", endpoint), ("region_name", region)):
        if value is not None and not isinstance(value, str):
            raise InvalidInputError(f"AWS connection {aws_conn_id!r}: '{name}' must be a string")
    if bool(conn.login) != bool(conn.password):
        raise InvalidInputError(
            f"AWS connection {aws_conn_id!r}: give both the access key id (login) and the "
            f"secret access key (password), or neither"
        )

    options: dict[str, Any] = {}
    env: dict[str, str] = {}
    if conn.login:
        options.update(key=conn.login, secret=conn.password)
        env.update(AWS_ACCESS_KEY_ID=str(conn.login), AWS_SECRET_ACCESS_KEY=str(conn.password))
        if token:
            options["token"] = str(token)
            env["AWS_SESSION_TOKEN"] = str(token)
    client_kwargs: dict[str, str] = {}
    if endpoint:
        client_kwargs["endpoint_url"] = endpoint
        env["AWS_ENDPOINT_URL"] = endpoint
    if region:
        client_kwargs["region_name"] = region
        env.update(AWS_REGION=region, AWS_DEFAULT_REGION=region)
    if client_kwargs:
        options["client_kwargs"] = client_kwargs
    return AwsStorage(s3fs_options=options, driver_env=env)


def _spark_connection(spark_conn_id: str) -> tuple[str, str | None]:
    """(master, deploy mode) of a `spark` connection, as the official Spark hook reads it."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    resolved = SparkSubmitHook(conn_id=spark_conn_id)._connection
    return str(resolved["master"]), resolved.get("deploy_mode")


class KafkaSparkHook(BaseHook):
    """What the operators, sensors and trigger read from Airflow connections: a `kafka`
    connection's client config (for in-process calls, and the part a job spec carries to the
    driver), a `spark` connection's master and deploy mode, and an `aws` connection's
    credentials for checkpoints and savepoints on S3. Every error names the connection, never
    a value from it."""

    hook_name = "Kafka + Spark Structured Streaming"

    def __init__(
        self,
        kafka_conn_id: str = "kafka_default",
        spark_conn_id: str | None = None,
        aws_conn_id: str | None = None,
    ):
        super().__init__()
        self.kafka_conn_id = kafka_conn_id
        self.spark_conn_id = spark_conn_id
        self.aws_conn_id = aws_conn_id

    @contextlib.contextmanager
    def storage(self) -> Iterator[None]:
        """S3 URLs opened inside this block use the `aws` connection (without one: the
        standard AWS variables and files)."""
        from airflow_provider_kafkaspark.core.storage import s3_options_scope

        with s3_options_scope(self.s3fs_options()):
            yield

    def s3fs_options(self) -> dict[str, Any] | None:
        """s3fs options of the `aws` connection; None without one."""
        return self._aws.s3fs_options if self._aws else None

    def driver_env(self) -> dict[str, str]:
        """The standard AWS variables of the `aws` connection, for a driver process (empty
        without one: the driver inherits the worker's)."""
        return self._aws.driver_env if self._aws else {}

    @functools.cached_property
    def _aws(self) -> AwsStorage | None:
        # Read once per hook: a task asks for its storage scope and its driver's variables.
        return aws_storage(self.aws_conn_id) if self.aws_conn_id else None

    def get_conn(self) -> dict[str, Any]:
        """The Kafka client config, as `kafka_client_config`."""
        return self.kafka_client_config()

    def kafka_client_config(self) -> dict[str, Any]:
        """The client config of the `kafka` connection, callbacks resolved (for in-process
        use: admin calls, probes, reconciliation)."""
        return _kafka_client_config(self.kafka_conn_id)

    def kafka_spec_config(self) -> tuple[str, dict[str, str]]:
        """(bootstrap servers, the rest of the client config as strings), for a job spec:
        what the driver's admin client, lag commits and sink producers need."""
        return _kafka_spec_config(self.kafka_conn_id)

    def spark_connection(self) -> tuple[str, str | None]:
        """(master, deploy mode) of the `spark` connection, as the official Spark hook reads it."""
        return _spark_connection(self._spark_conn_id())

    def _spark_conn_id(self) -> str:
        if not self.spark_conn_id:
            raise InvalidInputError(
                "no spark_conn_id given: a cluster master needs a `spark` connection"
            )
        return self.spark_conn_id
