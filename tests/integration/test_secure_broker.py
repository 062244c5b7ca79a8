"""The local stack's secured broker (issue 31): TLS, mutual TLS and SASL/OAUTHBEARER with
OIDC client credentials, against a real Kafka 4.1 broker and a real token endpoint.

librdkafka (confluent_kafka) produces and consumes on each secured listener, Kafka's own
Java client (4.1.1) and Spark 4.0's (kafka-clients 3.9.0) read through MTLS and OAUTH, and
each bad input is refused: a wrong CA, an expired client certificate, no client
certificate, a token endpoint that refuses the client. The refusals' texts asserted here
are the ones the provider's error classification sees.
"""

from __future__ import annotations

import base64
import json
import logging
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jwt
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from kafkaspark_devstack.jars import bundle_jars
from kafkaspark_devstack.java_probe import java_consume
from kafkaspark_devstack.kafka_security import (
    ALLOWED_URLS_PROPERTY,
    LOGIN_HANDLER,
    LOGIN_MODULE,
    MTLS,
    OAUTH,
    OAUTH_SSL,
    SSL,
)
from kafkaspark_devstack.secure_kafka import SecureKafka, secure_kafka
from tests.integration.kafka_util import create_topic, produce_numbered

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

TOPIC = "secured"
RECORDS = 5
# A refused client gives up on its own after this; each refusal shows well before.
REFUSAL_BUDGET_S = 6.0


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureKafka]:
    with secure_kafka(tmp_path_factory.mktemp("secure-kafka")) as started:
        create_topic(started.plaintext_servers, TOPIC, 1)
        produce_numbered(started.plaintext_servers, TOPIC, RECORDS)
        yield started


# -- librdkafka's settings per listener -------------------------------------------------------


def ssl_ca_file(stack: SecureKafka) -> dict[str, str]:
    return {"security.protocol": "SSL", "ssl.ca.location": str(stack.tls.ca_cert)}


def ssl_ca_inline(stack: SecureKafka) -> dict[str, str]:
    return {"security.protocol": "SSL", "ssl.ca.pem": stack.tls.ca_pem}


def mtls_inline(stack: SecureKafka) -> dict[str, str]:
    return {
        **ssl_ca_inline(stack),
        "ssl.certificate.pem": stack.tls.client_cert_pem,
        "ssl.key.pem": stack.tls.client_key_pem,
    }


def mtls_files(stack: SecureKafka) -> dict[str, str]:
    return {
        **ssl_ca_file(stack),
        "ssl.certificate.location": str(stack.tls.client_cert),
        "ssl.key.location": str(stack.tls.client_key),
    }


def mtls_encrypted_key(stack: SecureKafka) -> dict[str, str]:
    return {
        **mtls_inline(stack),
        "ssl.key.pem": stack.tls.client_key_encrypted_pem,
        "ssl.key.password": stack.tls.client_key_password,
    }


def oidc(stack: SecureKafka) -> dict[str, str]:
    client = stack.issuer.client()
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": client.client_id,
        "sasl.oauthbearer.client.secret": client.client_secret,
        "sasl.oauthbearer.token.endpoint.url": client.token_url,
        "sasl.oauthbearer.scope": client.scope,
    }


def oidc_over_tls(stack: SecureKafka) -> dict[str, str]:
    return {**oidc(stack), "security.protocol": "SASL_SSL", "ssl.ca.pem": stack.tls.ca_pem}


GOOD = {
    "ssl-ca-file": (SSL, ssl_ca_file),
    "ssl-ca-inline": (SSL, ssl_ca_inline),
    "mtls-inline": (MTLS, mtls_inline),
    "mtls-files": (MTLS, mtls_files),
    "mtls-encrypted-key": (MTLS, mtls_encrypted_key),
    "oauth-oidc": (OAUTH, oidc),
    "oauth-oidc-over-tls": (OAUTH_SSL, oidc_over_tls),
}


@pytest.mark.parametrize("case", sorted(GOOD))
def test_librdkafka_produces_and_consumes_on_each_listener(stack: SecureKafka, case: str) -> None:
    listener, settings = GOOD[case]
    conf: dict[str, Any] = {"bootstrap.servers": stack.servers(listener), **settings(stack)}
    marker = f"{case}-{uuid.uuid4().hex}".encode()
    errors: list[KafkaError] = []
    producer = Producer({**conf, "error_cb": errors.append})
    producer.produce(TOPIC, marker)
    assert producer.flush(30) == 0, f"not delivered on {listener}: {errors}"

    consumer = Consumer(
        {**conf, "group.id": f"secure-{case}", "auto.offset.reset": "earliest"},
    )
    try:
        consumer.subscribe([TOPIC])
        seen: list[bytes] = []
        for _ in range(60):  # 60 polls of up to 0.5 s
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen.append(message.value() or b"")
                if marker in seen:
                    break
        assert marker in seen, f"{case}: own record not read back ({len(seen)} read)"
        assert {str(i).encode() for i in range(RECORDS)} <= set(seen)
    finally:
        consumer.close()


# -- refusals, as librdkafka reports them ---------------------------------------------------


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def refused(stack: SecureKafka, listener: str, settings: dict[str, str]) -> list[KafkaError]:
    """What `error_cb` gets from a client with `settings` (librdkafka's own log lines go to a
    logger of their own instead of stderr); `list_topics` must fail meanwhile."""
    handler = _Lines()
    logger = logging.getLogger(f"{__name__}.librdkafka.{uuid.uuid4().hex}")
    logger.addHandler(handler)
    logger.propagate = False
    errors: list[KafkaError] = []
    conf: dict[str, Any] = {
        "bootstrap.servers": stack.servers(listener),
        "error_cb": errors.append,
        "logger": logger,
        **settings,
    }
    admin = AdminClient(conf)
    with pytest.raises(KafkaException) as raised:
        admin.list_topics(timeout=2)
    # The metadata call's own error says nothing about why: always a transport failure.
    assert raised.value.args[0].code() == KafkaError._TRANSPORT
    for _ in range(int(REFUSAL_BUDGET_S / 0.25)):  # error_cb is served from poll
        if errors:
            break
        admin.poll(0.25)
    assert errors, f"no error reported; log: {handler.lines[:5]}"
    return errors


def test_wrong_ca_is_refused(stack: SecureKafka) -> None:
    settings = {"security.protocol": "SSL", "ssl.ca.pem": stack.tls.other_ca_pem}
    first = refused(stack, SSL, settings)[0]
    assert first.code() == KafkaError._SSL
    assert "SSL handshake failed" in first.str()
    assert "certificate verify failed" in first.str()
    assert "broker certificate could not be verified" in first.str()


def test_expired_client_certificate_is_refused(stack: SecureKafka) -> None:
    settings = {
        **mtls_inline(stack),
        "ssl.certificate.pem": stack.tls.expired_client_cert_pem,
        "ssl.key.pem": stack.tls.expired_client_key_pem,
    }
    first = refused(stack, MTLS, settings)[0]
    # The broker tells the client only TLS alert 46; that the certificate expired is on the
    # broker's side alone.
    assert first.code() == KafkaError._TRANSPORT
    assert "ssl/tls alert certificate unknown: SSL alert number 46" in first.str()


def test_mtls_without_a_client_certificate_is_refused(stack: SecureKafka) -> None:
    first = refused(stack, MTLS, ssl_ca_inline(stack))[0]
    assert first.code() == KafkaError._TRANSPORT
    assert "ssl/tls alert bad certificate: SSL alert number 42" in first.str()


@pytest.mark.parametrize("who", ["wrong-secret", "unknown-client"])
def test_token_endpoint_refusing_the_client_is_refused(stack: SecureKafka, who: str) -> None:
    settings = oidc(stack)
    if who == "wrong-secret":
        settings["sasl.oauthbearer.client.secret"] = "not-the-secret"
    else:
        settings["sasl.oauthbearer.client.id"] = "nobody"
    errors = refused(stack, OAUTH, settings)
    first = errors[0]
    assert first.code() == KafkaError._AUTHENTICATION
    assert first.str().startswith("Failed to acquire SASL OAUTHBEARER token: ")
    assert '"error": "invalid_client"' in first.str()
    assert "not-the-secret" not in " ".join(e.str() for e in errors)


# -- the issuer itself ------------------------------------------------------------------------


def test_issuer_signs_what_the_broker_expects(stack: SecureKafka) -> None:
    issuer, client = stack.issuer, stack.issuer.client()
    # HTTP Basic, as both Kafka clients send it.
    basic = base64.b64encode(f"{client.client_id}:{client.client_secret}".encode()).decode()
    request = urllib.request.Request(
        issuer.token_url,
        data=b"grant_type=client_credentials&scope=kafka+read",
        headers={"Authorization": f"Basic {basic}"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        body = json.load(answer)
    assert body["token_type"] == "Bearer" and body["expires_in"] > 0
    with urllib.request.urlopen(issuer.jwks_url, timeout=10) as answer:
        jwks = jwt.PyJWKSet.from_dict(json.load(answer))
    header = jwt.get_unverified_header(body["access_token"])
    key = next(k for k in jwks.keys if k.key_id == header["kid"])
    claims = jwt.decode(
        body["access_token"],
        key.key,
        algorithms=["RS256"],
        audience=issuer.audience,
        issuer=issuer.issuer,
    )
    assert claims["sub"] == client.client_id and claims["scope"] == "kafka read"
    # Form fields work too; a wrong secret is refused as OAuth says.
    assert issuer.fetch_token(client.client_id, client.client_secret)
    with pytest.raises(urllib.error.HTTPError) as refusal:
        issuer.fetch_token(client.client_id, "wrong")
    assert refusal.value.code == 401
    assert json.loads(refusal.value.read())["error"] == "invalid_client"


# -- Kafka's Java client (4.1.1, the broker's own jars) ----------------------------------------


def java_oauth(stack: SecureKafka, secret: str | None = None) -> dict[str, str]:
    client = stack.issuer.client()
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": LOGIN_HANDLER,
        "sasl.oauthbearer.token.endpoint.url": client.token_url,
        "sasl.jaas.config": (
            f'{LOGIN_MODULE} required clientId="{client.client_id}" '
            f'clientSecret="{secret or client.client_secret}" scope="{client.scope}";'
        ),
    }


def java_mtls(
    stack: SecureKafka, cert: str | None = None, key: str | None = None
) -> dict[str, str]:
    return {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": stack.tls.ca_pem,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": cert or stack.tls.client_cert_pem,
        "ssl.keystore.key": key or stack.tls.client_key_pem,
    }


def test_java_client_reads_through_mtls_and_oauth(stack: SecureKafka, tmp_path: Path) -> None:
    classpath = bundle_jars("kafka")
    # kafka-clients 4.x fetches only the OAuth URLs this system property lists.
    allowed = {ALLOWED_URLS_PROPERTY: stack.issuer.token_url}
    for listener, settings in ((MTLS, java_mtls(stack)), (OAUTH, java_oauth(stack))):
        result = java_consume(
            tmp_path / listener,
            classpath,
            {"bootstrap.servers": stack.servers(listener), **settings},
            TOPIC,
            expect=RECORDS,
            system_properties=allowed,
        )
        assert result.ok and result.records >= RECORDS, result.output[-3000:]


def test_java_client_refusals(stack: SecureKafka, tmp_path: Path) -> None:
    classpath = bundle_jars("kafka")
    allowed = {ALLOWED_URLS_PROPERTY: stack.issuer.token_url}
    tls = stack.tls
    cases = {
        "wrong-ca": (SSL, {**java_mtls(stack), "ssl.truststore.certificates": tls.other_ca_pem}),
        "expired": (
            MTLS,
            java_mtls(stack, tls.expired_client_cert_pem, tls.expired_client_key_pem),
        ),
        "wrong-secret": (OAUTH, java_oauth(stack, secret="not-the-secret")),
    }
    expected = {
        "wrong-ca": "unable to find valid certification path to requested target",
        "expired": "Received fatal alert: certificate_unknown",
        "wrong-secret": 'The response code 401 and error response {"invalid_client"',
    }
    for name, (listener, settings) in cases.items():
        result = java_consume(
            tmp_path / name,
            classpath,
            {"bootstrap.servers": stack.servers(listener), **settings},
            TOPIC,
            expect=RECORDS,
            timeout_s=REFUSAL_BUDGET_S * 2,
            system_properties=allowed,
        )
        assert result.returncode == 2, f"{name}: {result.output[-3000:]}"
        assert any(expected[name] in e for e in result.errors), (name, result.errors)


# -- Spark 4.0's Kafka source (kafka-clients 3.9.0) ---------------------------------------------


def spark_options(stack: SecureKafka, listener: str) -> dict[str, str]:
    settings = java_oauth(stack) if listener == OAUTH else java_mtls(stack)
    return {
        "kafka.bootstrap.servers": stack.servers(listener),
        **{f"kafka.{k}": v for k, v in settings.items()},
        "subscribe": TOPIC,
        "startingOffsets": "earliest",
        "endingOffsets": "latest",
    }


@pytest.mark.parametrize("listener", [MTLS, OAUTH])
def test_spark_reads_through_mtls_and_oauth(
    stack: SecureKafka, spark: SparkSession, listener: str
) -> None:
    # kafka-clients 3.9.0 knows no allowed-URLs property: the token URL needs none.
    frame = spark.read.format("kafka").options(**spark_options(stack, listener)).load()
    values = {row.value.decode() for row in frame.select("value").collect()}
    assert {str(i) for i in range(RECORDS)} <= values
