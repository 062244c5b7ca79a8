"""A login the broker refuses is its own typed error, named by user and broker, and ends a
wait at once instead of timing out as "unavailable" (pure: no broker; the real SASL broker
is in tests/integration/test_kafka_auth.py)."""

from __future__ import annotations

import concurrent.futures
import time

import pytest
from airflow.sdk.exceptions import AirflowFailException
from confluent_kafka import KafkaError

from airflow_provider_kafkaspark.airflow_errors import to_airflow
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.kafka.client import (
    authentication_failed,
    is_authentication_error,
    refusal_kind,
)
from airflow_provider_kafkaspark.errors import (
    KafkaAccessError,
    KafkaAuthenticationError,
    KafkaUnavailableError,
)

SECRET = "s3cr3t-pa55"
REFUSED = (
    "sasl_plaintext://10.0.0.7:9093/bootstrap: SASL authentication error: Authentication "
    "failed: Invalid username or password (after 301ms in state AUTH_REQ)"
)
CUT_SHORT = (
    "sasl_plaintext://10.0.0.7:9093/bootstrap: SASL authentication error: "
    "SaslAuthenticateRequest failed: Local: Broker transport failure (after 0ms in state DOWN)"
)
CONFIG = {
    "bootstrap.servers": "10.0.0.7:9093",
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanisms": "PLAIN",
    "sasl.username": "alice",
    "sasl.password": SECRET,
}


def test_a_refused_login_is_an_authentication_error() -> None:
    assert is_authentication_error(KafkaError(KafkaError._AUTHENTICATION, REFUSED))
    assert is_authentication_error(KafkaError(KafkaError.SASL_AUTHENTICATION_FAILED, "denied"))


def test_a_handshake_cut_by_a_broker_going_down_is_an_outage() -> None:
    assert not is_authentication_error(KafkaError(KafkaError._AUTHENTICATION, CUT_SHORT))
    assert not is_authentication_error(KafkaError(KafkaError._TRANSPORT, "Connection refused"))


def test_the_error_names_user_broker_and_mechanism_but_no_password() -> None:
    error = authentication_failed(CONFIG, f"{REFUSED} {SECRET}")
    assert isinstance(error, KafkaAccessError)
    message = str(error)
    assert message.startswith(
        "SASL authentication failed for user 'alice' on broker 10.0.0.7:9093 (mechanism PLAIN)"
    )
    assert "Invalid username or password" in message
    assert SECRET not in message


# librdkafka 2.16's texts (error_cb) for refused TLS handshakes and OIDC clients, as the local
# stack's secured broker gives them (tests/integration/test_secure_broker.py).
WRONG_CA = (
    "ssl://127.0.0.1:40001/bootstrap: SSL handshake failed: error:0A000086:SSL routines::"
    "certificate verify failed: broker certificate could not be verified, verify that "
    "ssl.ca.location is correctly configured or root CA certificates are installed (install "
    "ca-certificates package) (after 12ms in state SSL_HANDSHAKE)"
)
EXPIRED = (
    "ssl://127.0.0.1:40002/bootstrap: Receive failed: error:0A000416:SSL routines::ssl/tls "
    "alert certificate unknown: SSL alert number 46 (after 9ms in state APIVERSION_QUERY)"
)
NO_CERT = (
    "ssl://127.0.0.1:40002/bootstrap: Receive failed: error:0A000412:SSL routines::ssl/tls "
    "alert bad certificate: SSL alert number 42 (after 9ms in state APIVERSION_QUERY)"
)
PLAINTEXT_PORT = (
    "ssl://127.0.0.1:40003/bootstrap: SSL handshake failed: Disconnected: SSL connection "
    "closed by peer: connecting to a PLAINTEXT broker listener? (after 3ms in state SSL_HANDSHAKE)"
)
TOKEN_REFUSED = (
    'Failed to acquire SASL OAUTHBEARER token: {"error": "invalid_client", '
    '"error_description": "bad client credentials"}'
)
TOKEN_ENDPOINT_DOWN = (
    'Failed to acquire SASL OAUTHBEARER token: Failed to retrieve OIDC token from "http://'
    "127.0.0.1:9/token\": Couldn't connect to server"
)
OIDC = {
    "bootstrap.servers": "127.0.0.1:40004",
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "OAUTHBEARER",
    "sasl.oauthbearer.method": "oidc",
    "sasl.oauthbearer.client.id": "job-client",
    "sasl.oauthbearer.client.secret": SECRET,
    "sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:9/token",
}


@pytest.mark.parametrize(
    ("code", "text", "kind", "says"),
    [
        (KafkaError._SSL, WRONG_CA, "tls-server", "the broker's certificate is not trusted"),
        (KafkaError._TRANSPORT, EXPIRED, "tls-client", "the broker refused the client cert"),
        (KafkaError._TRANSPORT, NO_CERT, "tls-client", "check the connection's ssl.certificate"),
        (KafkaError._SSL, PLAINTEXT_PORT, "tls-listener", "that port does not speak TLS"),
        (KafkaError._AUTHENTICATION, TOKEN_REFUSED, "oauth", "refused client 'job-client'"),
    ],
)
def test_tls_and_oidc_refusals_are_named_by_mechanism(
    code: int, text: str, kind: str, says: str
) -> None:
    error = KafkaError(code, text)
    assert is_authentication_error(error)
    assert refusal_kind(code, text) == kind
    config = OIDC if kind == "oauth" else {"security.protocol": "SSL", "ssl.key.pem": SECRET}
    message = str(authentication_failed(config, f"{text} {SECRET}", code=code))
    assert says in message and SECRET not in message
    assert "(SSL)" in message or "(SASL_SSL/OAUTHBEARER)" in message


def test_outages_of_tls_and_the_token_endpoint_stay_outages() -> None:
    assert not is_authentication_error(KafkaError(KafkaError._AUTHENTICATION, TOKEN_ENDPOINT_DOWN))
    plain_reset = "ssl://b:1/bootstrap: Receive failed: Connection reset by peer"
    assert not is_authentication_error(KafkaError(KafkaError._TRANSPORT, plain_reset))


def test_the_broker_given_wins_over_the_text() -> None:
    error = authentication_failed(CONFIG, "Authentication failed", broker="b2:9093")
    assert "on broker b2:9093" in str(error)


def test_authentication_errors_fail_the_task_without_retry() -> None:
    raised = to_airflow(authentication_failed(CONFIG, REFUSED), "health of /cp")
    assert type(raised) is AirflowFailException


def test_a_refused_login_ends_a_wait_at_once() -> None:
    facade = KafkaFacade(CONFIG, timeout_s=30)
    never: concurrent.futures.Future[int] = concurrent.futures.Future()
    calls = 0

    def ask(remaining: float) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            # What librdkafka's error_cb delivers while the request is pending.
            facade._on_client_error(KafkaError(KafkaError._AUTHENTICATION, REFUSED))
        return facade._result(never, remaining)

    started = time.monotonic()
    with pytest.raises(KafkaAuthenticationError, match=r"user 'alice' on broker 10\.0\.0\.7:9093"):
        facade._call("a topic description", ask)
    assert time.monotonic() - started < 5
    assert calls == 1


def test_a_timeout_after_a_refused_login_reports_the_refusal() -> None:
    facade = KafkaFacade(CONFIG, timeout_s=3)
    assert isinstance(facade._unavailable("a topic listing", "no answer"), KafkaUnavailableError)
    facade._on_client_error(KafkaError(KafkaError._AUTHENTICATION, REFUSED))
    assert isinstance(facade._unavailable("a topic listing", "no answer"), KafkaAuthenticationError)


def test_a_broker_going_down_mid_handshake_stays_an_outage() -> None:
    facade = KafkaFacade(CONFIG, timeout_s=3)
    facade._on_client_error(KafkaError(KafkaError._AUTHENTICATION, CUT_SHORT))
    assert isinstance(facade._unavailable("a topic listing", "no answer"), KafkaUnavailableError)
