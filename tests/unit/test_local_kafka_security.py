"""The secured listeners' broker settings, the TLS material and the OIDC issuer's client
authentication, without starting a JVM or the issuer (tests/integration/test_secure_broker.py
runs them for real)."""

from __future__ import annotations

import base64
import datetime
import json
import stat
from pathlib import Path

import pytest
from cryptography import x509

from kafkaspark_devstack.kafka import STATE_FILE, LocalKafkaCluster
from kafkaspark_devstack.kafka_security import (
    ALLOWED_URLS_PROPERTY,
    MTLS,
    OAUTH,
    OAUTH_SSL,
    SSL,
    VALIDATOR_HANDLER,
    BrokerSecurity,
    OAuthValidation,
)
from kafkaspark_devstack.oidc_issuer import _basic_credentials
from kafkaspark_devstack.tls_material import TlsMaterial, make_tls_material

OAUTH_SETTINGS = OAuthValidation(
    jwks_url="http://127.0.0.1:1/jwks",
    issuer="http://127.0.0.1:1",
    audience="kafka-broker",
    token_url="http://127.0.0.1:1/token",
)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return make_tls_material(tmp_path_factory.mktemp("tls"))


def test_no_security_keeps_the_single_listener(tmp_path: Path) -> None:
    cluster = LocalKafkaCluster(tmp_path, port=19092)
    config = cluster._node_config(cluster.node(1))
    assert config["listeners"] == "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19192"
    assert config["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19092"
    assert config["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    assert cluster.listener_names == [] and cluster._state.system_properties == {}


def test_secured_listeners_sit_next_to_plaintext(tmp_path: Path, tls: TlsMaterial) -> None:
    security = BrokerSecurity(tls=tls, oauth=OAUTH_SETTINGS)
    cluster = LocalKafkaCluster(tmp_path, brokers=2, port=19092, security=security)
    assert cluster.listener_names == [SSL, MTLS, OAUTH, OAUTH_SSL]
    node = cluster.node(2)
    config = cluster._node_config(node)
    ports = node.listener_ports
    assert config["listeners"] == (
        "PLAINTEXT://127.0.0.1:19093,CONTROLLER://127.0.0.1:19193,"
        f"SSL://127.0.0.1:{ports[SSL]},MTLS://127.0.0.1:{ports[MTLS]},"
        f"OAUTH://127.0.0.1:{ports[OAUTH]},OAUTH_SSL://127.0.0.1:{ports[OAUTH_SSL]}"
    )
    assert config["advertised.listeners"].startswith("PLAINTEXT://127.0.0.1:19093,SSL://")
    assert config["listener.security.protocol.map"] == (
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,"
        "OAUTH:SASL_PLAINTEXT,OAUTH_SSL:SASL_SSL"
    )
    assert config["inter.broker.listener.name"] == "PLAINTEXT"
    assert config["listener.name.mtls.ssl.client.auth"] == "required"
    assert config["listener.name.ssl.ssl.client.auth"] == "none"
    assert config["listener.name.ssl.ssl.keystore.type"] == "PEM"
    assert config["listener.name.ssl.ssl.keystore.location"] == str(tls.server_keystore)
    assert config["listener.name.oauth.oauthbearer.sasl.server.callback.handler.class"] == (
        VALIDATOR_HANDLER
    )
    assert config["listener.name.oauth_ssl.sasl.oauthbearer.expected.audience"] == "kafka-broker"
    assert "listener.name.oauth.ssl.keystore.location" not in config
    assert cluster._state.system_properties == {
        ALLOWED_URLS_PROPERTY: "http://127.0.0.1:1/jwks,http://127.0.0.1:1/token"
    }
    every = [
        p for n in cluster.nodes for p in (n.port, n.controller_port, *n.listener_ports.values())
    ]
    assert len(set(every)) == len(every) == 12
    assert cluster.listener_servers("mtls") == ",".join(
        f"127.0.0.1:{n.listener_ports[MTLS]}" for n in cluster.nodes
    )


def test_listeners_survive_in_cluster_json(tmp_path: Path, tls: TlsMaterial) -> None:
    first = LocalKafkaCluster(tmp_path, security=BrokerSecurity(tls=tls))
    first._save_state()
    raw = json.loads((tmp_path / STATE_FILE).read_text())
    assert raw["listeners"] == {SSL: "SSL", MTLS: "SSL"}
    again = LocalKafkaCluster.attach(tmp_path)
    assert again.listener_servers(SSL) == first.listener_servers(SSL)
    # A node restarted by another process gets the same JVM system properties.
    assert again._state.system_properties == first._state.system_properties
    assert again.status()["nodes"][0]["listeners"][MTLS] == first.listener_servers(MTLS)
    with pytest.raises(KeyError, match="no listener 'OAUTH'"):
        again.listener_servers(OAUTH)


def test_a_setting_given_by_the_caller_wins(tmp_path: Path, tls: TlsMaterial) -> None:
    cluster = LocalKafkaCluster(
        tmp_path,
        broker_config={"listener.name.mtls.ssl.client.auth": "requested"},
        security=BrokerSecurity(tls=tls),
    )
    config = cluster._node_config(cluster.node(1))
    assert config["listener.name.mtls.ssl.client.auth"] == "requested"


def test_tls_material(tls: TlsMaterial) -> None:
    ca = x509.load_pem_x509_certificate(tls.ca_pem.encode())
    other = x509.load_pem_x509_certificate(tls.other_ca_pem.encode())
    server = x509.load_pem_x509_certificate(tls.server_keystore.read_bytes())
    client = x509.load_pem_x509_certificate(tls.client_cert_pem.encode())
    expired = x509.load_pem_x509_certificate(tls.expired_client_cert_pem.encode())
    for leaf in (server, client, expired):
        leaf.verify_directly_issued_by(ca)
    with pytest.raises(ValueError):
        client.verify_directly_issued_by(other)
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    assert "127.0.0.1" in [str(a) for a in names.get_values_for_type(x509.IPAddress)]
    now = datetime.datetime.now(datetime.timezone.utc)
    assert expired.not_valid_after_utc < now < client.not_valid_after_utc
    # The broker's key store file: key first, then the chain up to the CA.
    text = tls.server_keystore.read_text()
    assert text.startswith("-----BEGIN PRIVATE KEY-----") and text.count("CERTIFICATE-----") == 4
    assert tls.client_key_pem.startswith("-----BEGIN PRIVATE KEY-----")
    assert tls.client_key_encrypted_pem.startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    for secret in (
        tls.server_keystore,
        tls.client_key,
        tls.client_key_encrypted,
        tls.client_key_password_file,
        tls.expired_client_key,
    ):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600, secret
    # Made once: a second call keeps the same files.
    assert make_tls_material(tls.folder).ca_pem == tls.ca_pem


def test_basic_credentials_are_read_raw_and_form_decoded() -> None:
    def header(text: str) -> str:
        return "Basic " + base64.b64encode(text.encode()).decode()

    assert _basic_credentials(header("id:secret")) == [("id", "secret")]
    # Kafka's Java client form-encodes both parts, librdkafka sends them as they are.
    assert _basic_credentials(header("id:a%2Bb+c")) == [("id", "a%2Bb+c"), ("id", "a+b c")]
    assert _basic_credentials(header("no-colon")) == []
    assert _basic_credentials("Bearer x") == []
    assert _basic_credentials("Basic !!!") == []
    assert _basic_credentials(None) == []
