"""`KafkaSparkHook`: connections in. The official providers' `kafka` connection (its extra is
the librdkafka config dict), `aws` connection (read by the Amazon provider's `AwsBaseHook`)
and, for cluster managers, their `spark` connection; this provider defines no connection type
of its own.

Imported by operators inside `execute`, never at DAG parse time; boto3 (through the Amazon
provider) is imported only when an `aws` connection is read.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook

from airflow_provider_kafkaspark.core.kafka.security import check, describe, driver_login_gap
from airflow_provider_kafkaspark.errors import InvalidInputError

if TYPE_CHECKING:
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

# -- the `kafka` connection -------------------------------------------------------------------
# Read into the client config for in-process calls and the part a job spec carries to a driver.
#
# The Kafka provider builds a client config only in a private method (`KafkaBaseHook.
# _build_config`; its public `get_conn` returns an AdminClient, not the config).
# `_kafka_client_config` does by hand what that method does, from the connection's extra:
# - string-valued callbacks (`error_cb`, `oauth_cb`, ...) are imported only when their dotted
#   path is listed in `[apache_kafka] callback_allowlist`, the provider's own setting;
# - an Amazon MSK cluster with `sasl.mechanism` OAUTHBEARER and no `oauth_cb` gets an MSK IAM
#   token callback (the provider's `msk` extra, `aws-msk-iam-sasl-signer-python`);
# - a Google Managed Kafka cluster gets the Google provider's token callback.
# Without the provider's module, this imports no confluent_kafka.

# librdkafka callbacks are Python objects: they cannot travel to a Spark driver in a spec.
_CALLBACK_KEYS = ("error_cb", "throttle_cb", "stats_cb", "log_cb", "oauth_cb", "on_commit")
# The Kafka provider's setting (its KAFKA_COMMON_CONFIG_SECTION, CALLBACK_ALLOWLIST_CONFIG_OPTION).
_ALLOWLIST_SECTION, _ALLOWLIST_OPTION = "apache_kafka", "callback_allowlist"
# The Kafka provider's MSK_BOOTSTRAP_SERVERS_REGEX (2.1), copied: its module imports
# confluent_kafka, and earlier releases do not have it. The region goes to the token signer.
_MSK_BOOTSTRAP_SERVERS = re.compile(
    r"\.kafka(?:-serverless)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?(?::\d+)?(?=$|[,\s])",
    re.IGNORECASE,
)


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


def _callback_allowlist() -> frozenset[str]:
    from airflow.sdk import conf

    listed = conf.get(_ALLOWLIST_SECTION, _ALLOWLIST_OPTION, fallback="") or ""
    return frozenset(path.strip() for path in listed.split(",") if path.strip())


def _resolve_callbacks(kafka_conn_id: str, config: dict[str, Any]) -> None:
    """Replace the callbacks given as dotted paths by what they name, as the Kafka provider
    does: only paths listed in `[apache_kafka] callback_allowlist` (a connection's extra must
    not choose code to run). Errors name the setting and the path, never another value."""
    for key in _CALLBACK_KEYS:
        path = config.get(key)
        if not isinstance(path, str):
            continue
        if path not in _callback_allowlist():
            raise InvalidInputError(
                f"Kafka connection {kafka_conn_id!r}: refusing to resolve callback "
                f"{key}={path!r}: it is not in [{_ALLOWLIST_SECTION}] {_ALLOWLIST_OPTION} "
                f"(AIRFLOW__{_ALLOWLIST_SECTION.upper()}__{_ALLOWLIST_OPTION.upper()})"
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


def _google_managed(servers: str) -> bool:
    """The servers are a Google Managed Kafka cluster's (as the Kafka provider tells them)."""
    return "managedkafka" in servers and "cloud.goog" in servers


def _add_managed_token_callback(kafka_conn_id: str, config: dict[str, Any], servers: str) -> None:
    """A managed cluster's token callback, as the Kafka provider adds it; an explicit
    `oauth_cb` is kept."""
    if _google_managed(servers):
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
    match = _MSK_BOOTSTRAP_SERVERS.search(servers)
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


def _token_source(extra: dict[str, Any], servers: str) -> str | None:
    """What makes this connection's OAUTHBEARER token inside Airflow, as
    `_add_managed_token_callback` picks it; None when nothing does."""
    if "oauth_cb" in extra:
        return "the extra's oauth_cb"
    if _google_managed(servers):
        return "Google Managed Kafka's token callback"
    if _MSK_BOOTSTRAP_SERVERS.search(servers):
        return "the MSK IAM token signer"
    return None


def _kafka_client_config(kafka_conn_id: str) -> dict[str, Any]:
    """The client config of a `kafka` connection, callbacks resolved (for in-process use:
    admin calls, probes, reconciliation)."""
    config = _connection_extra(kafka_conn_id)
    servers = _servers(kafka_conn_id, config)
    check(config, f"Kafka connection {kafka_conn_id!r}")
    _resolve_callbacks(kafka_conn_id, config)
    _add_managed_token_callback(kafka_conn_id, config, servers)
    return config


def _kafka_spec_config(kafka_conn_id: str) -> tuple[str, dict[str, str]]:
    """(bootstrap servers, the rest of the client config as strings) of a `kafka`
    connection, for a job spec: what the driver's admin client, lag commits and sink
    producers need (security settings included)."""
    extra = _connection_extra(kafka_conn_id)
    servers = _servers(kafka_conn_id, extra)
    gap = driver_login_gap(extra, _token_source(extra, servers))
    if gap is not None:
        raise InvalidInputError(f"Kafka connection {kafka_conn_id!r} ({describe(extra)}): {gap}")
    extra.pop("bootstrap.servers", None)
    for key in _CALLBACK_KEYS:
        extra.pop(key, None)
    # Consumer-only settings of the connection would make producers and admin clients warn.
    for key in ("group.id", "auto.offset.reset", "enable.auto.commit"):
        extra.pop(key, None)
    return servers, {str(k): str(v) for k, v in extra.items()}


# -- the `aws` connection ---------------------------------------------------------------------
# Read through the Amazon provider's `AwsBaseHook`, for checkpoints and savepoints on S3. The
# hook reads the connection as the Amazon provider documents it: keys from login/password
# (or the extra's `aws_access_key_id`/`aws_secret_access_key`), `aws_session_token`,
# `region_name`, `role_arn` (with `assume_role_method`: plain, SAML, web identity),
# `profile_name`, and the endpoint of an S3-compatible store as `service_config.s3.endpoint_url`
# or `endpoint_url`. A connection that names a credential source (keys, a role, a profile) has
# its credentials resolved by the hook and frozen (key, secret, session token); one that names
# none leaves them to the default chain of each process (instance profile, the AWS variables),
# which refreshes them itself.


@dataclass(frozen=True)
class AwsStorage:
    """What one `aws` connection gives: s3fs options for this process, and the standard AWS
    variables for a driver process (which S3A and s3fs there both read). `repr` hides both:
    they hold the secret key."""

    s3fs_options: dict[str, Any] = field(repr=False)
    driver_env: dict[str, str] = field(repr=False)


def _check_fields(aws_conn_id: str) -> None:
    """Typed errors the Amazon provider does not give: it reads an undefined connection as an
    empty one, and ignores a login without a password."""
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
    if not isinstance(extra.get("service_config", {}), dict):
        raise InvalidInputError(
            f"AWS connection {aws_conn_id!r}: 'service_config' must be an object"
        )
    if bool(conn.login) != bool(conn.password):
        raise InvalidInputError(
            f"AWS connection {aws_conn_id!r}: give both the access key id (login) and the "
            f"secret access key (password), or neither"
        )


def _frozen_credentials(aws_conn_id: str, hook: AwsBaseHook) -> tuple[str, str, str | None]:
    """(key, secret, token) as the Amazon provider resolves them (assuming a role when the
    connection has one); its `get_credentials` also masks the secret and token in logs."""
    try:
        credentials = hook.get_credentials()
    except Exception as exc:  # noqa: BLE001 - botocore's errors have no common base
        # The type only: botocore's messages may quote a role's session policy or a token.
        raise InvalidInputError(
            f"AWS connection {aws_conn_id!r}: the Amazon provider could not get its "
            f"credentials ({type(exc).__name__})"
        ) from None
    if credentials is None or not credentials.access_key or not credentials.secret_key:
        raise InvalidInputError(f"AWS connection {aws_conn_id!r}: it yields no credentials")
    return credentials.access_key, credentials.secret_key, credentials.token or None


def aws_storage(aws_conn_id: str) -> AwsStorage:
    """Read an `aws` connection; errors name the connection and the field, never a value."""
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    _check_fields(aws_conn_id)
    hook = AwsBaseHook(aws_conn_id=aws_conn_id, client_type="s3")
    config = hook.conn_config
    endpoint = config.get_service_endpoint_url("s3")
    region = config.region_name
    for name, value in (("endpoint_url", endpoint), ("region_name", region)):
        if value is not None and not isinstance(value, str):
            raise InvalidInputError(f"AWS connection {aws_conn_id!r}: '{name}' must be a string")

    options: dict[str, Any] = {}
    env: dict[str, str] = {}
    if config.aws_access_key_id or config.role_arn or config.profile_name:
        key, secret, token = _frozen_credentials(aws_conn_id, hook)
        options.update(key=key, secret=secret)
        env.update(AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
        if token:
            options["token"] = token
            env["AWS_SESSION_TOKEN"] = token
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


# -- the `spark` connection -------------------------------------------------------------------


def _spark_connection(spark_conn_id: str) -> tuple[str, str | None]:
    """(master, deploy mode) of a `spark` connection, read as the official Spark hook reads it
    (which it does only privately, in `SparkSubmitHook._resolve_connection`): a UI connection
    keeps the whole master URL in its host, a URI one splits the scheme into the type; the
    port is appended; the extra's `deploy-mode` is the mode."""
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        conn = BaseHook.get_connection(spark_conn_id)
    except AirflowNotFoundException as exc:
        raise InvalidInputError(
            f"Spark connection {spark_conn_id!r} is not defined: add it (UI, CLI or an "
            f"AIRFLOW_CONN_{str(spark_conn_id).upper()} variable)"
        ) from exc
    if conn.conn_type == "spark" and conn.host and ("://" in conn.host or not conn.port):
        master = str(conn.host)
    else:
        master = f"{conn.conn_type}://{conn.host or ''}"
    if conn.port:
        master = f"{master}:{conn.port}"
    extra = conn.extra_dejson
    mode = extra.get("deploy-mode") if isinstance(extra, dict) else None
    return master, None if mode is None else str(mode)


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
        from airflow_provider_kafkaspark.core.storage.location import s3_options_scope

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

    def kafka_servers(self) -> str:
        """The `kafka` connection's bootstrap servers."""
        return _servers(self.kafka_conn_id, _connection_extra(self.kafka_conn_id))

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
