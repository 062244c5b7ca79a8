"""An official `aws` connection read for S3 storage, through the Amazon provider's AwsBaseHook:
s3fs options for the task's process, the standard AWS variables for the driver, and errors that
name the connection, never a value."""

from __future__ import annotations

import json
import logging

import pytest
from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
from botocore.credentials import ReadOnlyCredentials  # type: ignore[import-untyped]

from airflow_provider_kafkaspark.core.storage.location import open_location, s3_options_scope
from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook, aws_storage

SECRET = "s3cr3t-SENTINEL"


def _define(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: object) -> None:
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "aws", **fields})
    )


def test_keys_endpoint_region_and_token(monkeypatch: pytest.MonkeyPatch) -> None:
    _define(
        monkeypatch,
        "store",
        login="AKID",
        password=SECRET,
        extra={
            "region_name": "eu-west-1",
            "aws_session_token": "tok",
            "service_config": {"s3": {"endpoint_url": "http://127.0.0.1:8333"}},
            "endpoint_url": "http://ignored:1",
        },
    )
    found = aws_storage("store")
    assert found.s3fs_options == {
        "key": "AKID",
        "secret": SECRET,
        "token": "tok",
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:8333", "region_name": "eu-west-1"},
    }
    assert found.driver_env == {
        "AWS_ACCESS_KEY_ID": "AKID",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_SESSION_TOKEN": "tok",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:8333",
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }
    assert SECRET not in repr(found)


def test_no_login_leaves_credentials_to_the_default_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    _define(monkeypatch, "profile", extra={"endpoint_url": "https://s3.example"})
    found = aws_storage("profile")
    assert found.s3fs_options == {"client_kwargs": {"endpoint_url": "https://s3.example"}}
    assert found.driver_env == {"AWS_ENDPOINT_URL": "https://s3.example"}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"login": "AKID"}, "give both the access key id"),
        ({"password": SECRET}, "give both the access key id"),
        ({"extra": {"region_name": 3}}, "'region_name' must be a string"),
        ({"extra": {"endpoint_url": ["x"]}}, "'endpoint_url' must be a string"),
    ],
)
def test_bad_connections_name_the_field_and_hide_the_secret(
    monkeypatch: pytest.MonkeyPatch, fields: dict[str, object], message: str
) -> None:
    _define(monkeypatch, "bad", **fields)
    with pytest.raises(InvalidInputError, match=message) as caught:
        aws_storage("bad")
    assert "'bad'" in str(caught.value) and SECRET not in str(caught.value)


def test_an_undefined_connection_is_named() -> None:
    with pytest.raises(InvalidInputError, match="AWS connection 'nowhere' is not defined"):
        aws_storage("nowhere")


def test_s3_urls_opened_in_the_hook_scope_use_the_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _define(monkeypatch, "store", login="AKID", password=SECRET)
    hook = KafkaSparkHook(aws_conn_id="store")
    assert hook.driver_env()["AWS_ACCESS_KEY_ID"] == "AKID"
    with hook.storage():
        inside = open_location("s3://bucket/cp").fs
        local = open_location("/tmp/cp").fs
    outside = open_location("s3://bucket/cp").fs
    assert (inside.key, inside.secret) == ("AKID", SECRET)
    assert outside.key is None and inside is not outside
    assert "s3" not in local.protocol
    with s3_options_scope(None):
        assert open_location("s3://bucket/cp").fs.key is None


def test_without_an_aws_connection_nothing_is_set() -> None:
    hook = KafkaSparkHook()
    assert hook.driver_env() == {} and hook.s3fs_options() is None


def test_one_hook_reads_its_aws_connection_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A submit asks for its storage scope and its driver's variables: one lookup."""
    import airflow_provider_kafkaspark.hooks.kafkaspark as module

    _define(monkeypatch, "store", login="AKID", password=SECRET)
    reads: list[str] = []

    def counted(conn_id: str) -> object:
        reads.append(conn_id)
        return aws_storage(conn_id)

    monkeypatch.setattr(module, "aws_storage", counted)
    hook = KafkaSparkHook(aws_conn_id="store")
    with hook.storage():
        pass
    assert hook.driver_env()["AWS_SECRET_ACCESS_KEY"] == SECRET
    assert reads == ["store"]


# -- through the Amazon provider's AwsBaseHook ------------------------------------------------


def test_keys_endpoint_url_and_region_give_the_storage_options_they_always_gave(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _define(
        monkeypatch,
        "plain",
        login="AKID",
        password=SECRET,
        extra={"endpoint_url": "http://127.0.0.1:8333", "region_name": "us-east-1"},
    )
    found = aws_storage("plain")
    assert found.s3fs_options == {
        "key": "AKID",
        "secret": SECRET,
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:8333", "region_name": "us-east-1"},
    }
    assert found.driver_env == {
        "AWS_ACCESS_KEY_ID": "AKID",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_ENDPOINT_URL": "http://127.0.0.1:8333",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def _spy_credentials(
    monkeypatch: pytest.MonkeyPatch, answer: ReadOnlyCredentials | None = None
) -> list[AwsBaseHook]:
    """Record the AwsBaseHook asked for credentials; answer for it when given (no STS here)."""
    asked: list[AwsBaseHook] = []
    original = AwsBaseHook.get_credentials

    def get_credentials(self: AwsBaseHook, region_name: str | None = None) -> ReadOnlyCredentials:
        asked.append(self)
        return answer if answer is not None else original(self, region_name)

    monkeypatch.setattr(AwsBaseHook, "get_credentials", get_credentials)
    return asked


def test_a_role_is_assumed_by_the_amazon_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    role = "arn:aws:iam::123456789012:role/checkpoints"
    _define(monkeypatch, "role", extra={"role_arn": role, "region_name": "eu-west-1"})
    asked = _spy_credentials(monkeypatch, ReadOnlyCredentials("ASIAROLE", SECRET, "session-tok"))
    found = aws_storage("role")
    [hook] = asked
    assert hook.aws_conn_id == "role" and hook.conn_config.role_arn == role
    assert found.s3fs_options == {
        "key": "ASIAROLE",
        "secret": SECRET,
        "token": "session-tok",
        "client_kwargs": {"region_name": "eu-west-1"},
    }
    assert found.driver_env["AWS_SESSION_TOKEN"] == "session-tok"


def test_static_keys_come_back_frozen_from_the_amazon_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _define(monkeypatch, "static", login="AKID", password=SECRET, extra={"aws_session_token": "t"})
    asked = _spy_credentials(monkeypatch)
    found = aws_storage("static")
    assert [hook.aws_conn_id for hook in asked] == ["static"]
    frozen = asked[0].get_credentials()
    assert isinstance(frozen, ReadOnlyCredentials)
    assert (found.s3fs_options["key"], found.s3fs_options["secret"]) == ("AKID", SECRET)
    assert found.s3fs_options["token"] == frozen.token == "t"


def test_a_connection_naming_no_credentials_does_not_ask_for_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _define(monkeypatch, "chain", extra={"region_name": "eu-west-1"})
    asked = _spy_credentials(monkeypatch)
    assert aws_storage("chain").s3fs_options == {"client_kwargs": {"region_name": "eu-west-1"}}
    assert asked == []


def test_a_failed_role_assumption_is_typed_and_quotes_nothing(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _define(
        monkeypatch,
        "denied",
        login="AKID",
        password=SECRET,
        extra={"role_arn": "arn:aws:iam::123456789012:role/x"},
    )

    def refuse(self: AwsBaseHook, region_name: str | None = None) -> ReadOnlyCredentials:
        raise RuntimeError(f"AccessDenied for a caller signing with {SECRET}")

    monkeypatch.setattr(AwsBaseHook, "get_credentials", refuse)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(InvalidInputError, match=r"'denied'.*RuntimeError") as caught:
        aws_storage("denied")
    assert SECRET not in str(caught.value) and caught.value.__cause__ is None
    assert SECRET not in caplog.text + "".join(capsys.readouterr())


def test_reading_a_connection_logs_no_secret_and_reprs_none(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Logs go to caplog (stdlib) and to stdout (Airflow's structlog): neither has it."""
    _define(
        monkeypatch,
        "quiet",
        login="AKID",
        password=SECRET,
        extra={"aws_session_token": "tok-" + SECRET, "endpoint_url": "http://127.0.0.1:1"},
    )
    caplog.set_level(logging.DEBUG)
    hook = KafkaSparkHook(aws_conn_id="quiet")
    assert hook.driver_env()["AWS_SESSION_TOKEN"] == "tok-" + SECRET
    logged = caplog.text + "".join(capsys.readouterr())
    assert "credentials retrieved from login and password" in logged
    assert SECRET not in logged
    assert SECRET not in repr(aws_storage("quiet")) and SECRET not in repr(hook)
