"""An official `aws` connection, read through the Amazon provider's `AwsBaseHook` for
checkpoints and savepoints on S3.

The hook reads the connection as the Amazon provider documents it: keys from login/password
(or the extra's `aws_access_key_id`/`aws_secret_access_key`), `aws_session_token`,
`region_name`, `role_arn` (with `assume_role_method`: plain, SAML, web identity),
`profile_name`, and the endpoint of an S3-compatible store as `service_config.s3.endpoint_url`
or `endpoint_url`. A connection that names a credential source (keys, a role, a profile) has
its credentials resolved by the hook and frozen (key, secret, session token); one that names
none leaves them to the default chain of each process (instance profile, the AWS variables),
which refreshes them itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook

from airflow_provider_kafkaspark.errors import InvalidInputError

if TYPE_CHECKING:
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook


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
