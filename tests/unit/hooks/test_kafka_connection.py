"""The client config of a `kafka` connection, built by hand as the Kafka provider builds it
privately: dotted-path callbacks resolved only when allowlisted, an MSK IAM token callback for
an MSK cluster with OAUTHBEARER; errors name the connection and the setting, never a secret."""

from __future__ import annotations

import logging
import sys
import types

import pytest

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
from tests.unit.airflow_helpers import kafka_connection

SECRET = "s3ntinel-sasl-pa55word"
ALLOWLIST = "AIRFLOW__APACHE_KAFKA__CALLBACK_ALLOWLIST"
SERVERS = "127.0.0.1:1"


def test_an_allowlisted_dotted_callback_is_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOWLIST, "os.getcwd, logging.getLogger")
    conn = kafka_connection(
        monkeypatch,
        "unit_cb",
        {"bootstrap.servers": SERVERS, "error_cb": "logging.getLogger", "sasl.password": SECRET},
    )
    config = KafkaSparkHook(conn).kafka_client_config()
    assert config["error_cb"] is logging.getLogger
    assert config["sasl.password"] == SECRET
    # A spec for a driver carries no callback: it cannot travel.
    assert "error_cb" not in KafkaSparkHook(conn).kafka_spec_config()[1]


@pytest.mark.parametrize("allowlist", ["", "os.getcwd"])
def test_a_callback_not_allowlisted_is_refused(
    monkeypatch: pytest.MonkeyPatch, allowlist: str
) -> None:
    monkeypatch.setenv(ALLOWLIST, allowlist)
    conn = kafka_connection(
        monkeypatch,
        "unit_cb",
        {"bootstrap.servers": SERVERS, "error_cb": "os.system", "sasl.password": SECRET},
    )
    with pytest.raises(InvalidInputError, match=r"'unit_cb'.*error_cb='os\.system'") as err:
        KafkaSparkHook(conn).kafka_client_config()
    assert "callback_allowlist" in str(err.value) and SECRET not in str(err.value)


def test_an_allowlisted_callback_that_does_not_import_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ALLOWLIST, "no_such_package.cb")
    conn = kafka_connection(
        monkeypatch, "unit_cb", {"bootstrap.servers": SERVERS, "stats_cb": "no_such_package.cb"}
    )
    with pytest.raises(InvalidInputError, match=r"stats_cb='no_such_package\.cb' cannot be"):
        KafkaSparkHook(conn).kafka_client_config()


MSK = "b-1.demo.abcde1.c2.kafka.eu-west-1.amazonaws.com:9098"


def test_an_msk_cluster_with_oauthbearer_gets_the_iam_token_callback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    signer = types.ModuleType("aws_msk_iam_sasl_signer")
    regions: list[str] = []

    class MSKAuthTokenProvider:
        @staticmethod
        def generate_auth_token(region: str) -> tuple[str, int]:
            regions.append(region)
            return "token", 90_000

    signer.MSKAuthTokenProvider = MSKAuthTokenProvider  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "aws_msk_iam_sasl_signer", signer)
    conn = kafka_connection(
        monkeypatch,
        "unit_msk",
        {
            "bootstrap.servers": MSK,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "OAUTHBEARER",
        },
    )
    callback = KafkaSparkHook(conn).kafka_client_config()["oauth_cb"]
    assert callback("ignored") == ("token", 90.0) and regions == ["eu-west-1"]


@pytest.mark.parametrize(
    "extra",
    [
        {
            "bootstrap.servers": MSK,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "u",
            "sasl.password": "p",
        },
        {
            "bootstrap.servers": SERVERS,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "OAUTHBEARER",
        },
    ],
    ids=["msk_without_oauthbearer", "oauthbearer_elsewhere"],
)
def test_no_token_callback_is_added_elsewhere(
    monkeypatch: pytest.MonkeyPatch, extra: dict[str, str]
) -> None:
    conn = kafka_connection(monkeypatch, "unit_plain", extra)
    assert "oauth_cb" not in KafkaSparkHook(conn).kafka_client_config()


def test_an_msk_cluster_without_the_signer_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "aws_msk_iam_sasl_signer", None)
    conn = kafka_connection(
        monkeypatch,
        "unit_msk",
        {
            "bootstrap.servers": MSK,
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "OAUTHBEARER",
        },
    )
    with pytest.raises(InvalidInputError, match=r"'unit_msk'.*apache-kafka\[msk\]"):
        KafkaSparkHook(conn).kafka_client_config()


@pytest.mark.parametrize(
    ("extra", "source"),
    [
        ({"bootstrap.servers": MSK}, "the MSK IAM token signer"),
        (
            {"bootstrap.servers": "bootstrap.k.europe-west1.managedkafka.p.cloud.goog:9092"},
            "Google Managed Kafka's token callback",
        ),
        ({"bootstrap.servers": SERVERS, "oauth_cb": "tokens.fetch"}, "the extra's oauth_cb"),
    ],
)
def test_a_token_only_airflow_can_make_is_refused_for_a_driver(
    monkeypatch: pytest.MonkeyPatch, extra: dict[str, str], source: str
) -> None:
    conn = kafka_connection(
        monkeypatch,
        "unit_token",
        {**extra, "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"},
    )
    with pytest.raises(InvalidInputError, match=r"'unit_token' \(SASL_SSL/OAUTHBEARER\)") as err:
        KafkaSparkHook(conn).kafka_spec_config()
    assert source in str(err.value) and "sasl.oauthbearer.method=oidc" in str(err.value)


def test_an_oidc_login_on_msk_travels_to_the_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = kafka_connection(
        monkeypatch,
        "unit_oidc",
        {
            "bootstrap.servers": MSK,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.client.id": "job",
            "sasl.oauthbearer.client.secret": SECRET,
            "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/token",
        },
    )
    servers, config = KafkaSparkHook(conn).kafka_spec_config()
    assert servers == MSK and config["sasl.oauthbearer.method"] == "oidc"
