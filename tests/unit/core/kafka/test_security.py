"""The translation from a `kafka` connection to the Java client's settings, per mechanism, and
the refusals of settings that do not fit together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from airflow_provider_kafkaspark.core.kafka.security import (
    EMBEDDED,
    OAUTH_LOGIN_HANDLER,
    check,
    describe,
    is_secret_key,
    java_client_options,
    portable,
    redact,
)
from airflow_provider_kafkaspark.errors import InvalidInputError

SECRET = "s3ntinel-pa55word"
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="u" password="{SECRET}";'
)
CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
CERT = "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"


def no_files(path: str) -> bytes:
    raise AssertionError(f"no file is read here, asked for {path}")


def pkcs1_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


# -- PLAIN and SCRAM ---------------------------------------------------------------------------


def test_plain_becomes_a_jaas_line_and_librdkafka_keys_stay_behind() -> None:
    config = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "user",
        "sasl.password": 'pa"ss\\word',
        "client.id": "me",
    }
    check(config)
    options = java_client_options(config)
    assert options["kafka.security.protocol"] == "SASL_PLAINTEXT"
    assert options["kafka.sasl.mechanism"] == "PLAIN"
    assert options["kafka.client.id"] == "me"
    assert options["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="user" password="pa\\"ss\\\\word";'
    )
    for librdkafka_only in ("sasl.username", "sasl.password", "sasl.mechanisms"):
        assert f"kafka.{librdkafka_only}" not in options


def test_scram_and_a_written_jaas_line() -> None:
    scram = java_client_options(
        {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u", "sasl.password": "p"}
    )
    assert scram["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert scram["kafka.sasl.jaas.config"].startswith(
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
    )
    creds = {"sasl.mechanisms": "PLAIN", "sasl.username": "u", "sasl.password": "p"}
    # A JAAS line the job spec's own options give wins; the connection's own one passes as is.
    assert "kafka.sasl.jaas.config" not in java_client_options(
        creds, {"kafka.sasl.jaas.config": JAAS}
    )
    assert java_client_options({**creds, "sasl.jaas.config": JAAS})["kafka.sasl.jaas.config"] == (
        JAAS
    )


# -- TLS and mutual TLS ------------------------------------------------------------------------


def test_tls_gives_the_java_client_a_pem_trust_store() -> None:
    config = {"security.protocol": "SSL", "ssl.ca.pem": CA}
    check(config)
    options = java_client_options(config)
    assert options == {
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.certificates": CA,
    }


def test_mutual_tls_gives_a_pem_key_store() -> None:
    config = {
        "security.protocol": "SSL",
        "ssl.ca.pem": CA,
        "ssl.certificate.pem": CERT,
        "ssl.key.pem": "-----BEGIN PRIVATE KEY-----\nk\n-----END PRIVATE KEY-----\n",
        "ssl.key.password": SECRET,
        "ssl.endpoint.identification.algorithm": "none",
    }
    check(config)
    options = java_client_options(config)
    assert options["kafka.ssl.keystore.type"] == "PEM"
    assert options["kafka.ssl.keystore.certificate.chain"] == CERT
    assert options["kafka.ssl.keystore.key"] == config["ssl.key.pem"]
    assert options["kafka.ssl.key.password"] == SECRET
    # librdkafka's "none" is the Java client's empty algorithm.
    assert options["kafka.ssl.endpoint.identification.algorithm"] == ""
    for librdkafka_only in ("ssl.ca.pem", "ssl.certificate.pem", "ssl.key.pem"):
        assert f"kafka.{librdkafka_only}" not in options


def test_portable_reads_files_where_the_connection_is_read(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text(CA)
    (tmp_path / "client.pem").write_text(CERT)
    (tmp_path / "client.key").write_text(pkcs1_key())
    config = {
        "security.protocol": "SSL",
        "ssl.ca.location": str(tmp_path / "ca.pem"),
        "ssl.certificate.location": str(tmp_path / "client.pem"),
        "ssl.key.location": str(tmp_path / "client.key"),
    }
    moved = portable(config, lambda p: Path(p).read_bytes())
    assert moved["ssl.ca.pem"] == CA and moved["ssl.certificate.pem"] == CERT
    assert not any(k.endswith(".location") for k in moved)
    # An RSA key in PKCS#1 becomes PKCS#8, the one form the Java client reads.
    assert moved["ssl.key.pem"].startswith("-----BEGIN PRIVATE KEY-----")
    # The system's CA store stays a location.
    assert portable({"ssl.ca.location": "probe"}, lambda p: b"")["ssl.ca.location"] == "probe"


def test_an_encrypted_key_is_opened_for_the_java_client() -> None:
    # Kafka's Java client on Java 17 cannot read a PBES2-encrypted PKCS#8 key (what current
    # tools write): the key travels opened, as a secret, and its password is spent.
    key = ec.generate_private_key(ec.SECP256R1())
    sec1 = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.BestAvailableEncryption(SECRET.encode()),
    ).decode()
    moved = portable(
        {"security.protocol": "SSL", "ssl.key.pem": sec1, "ssl.key.password": SECRET}, no_files
    )
    assert moved["ssl.key.pem"].startswith("-----BEGIN PRIVATE KEY-----")
    assert "ssl.key.password" not in moved
    loaded = serialization.load_pem_private_key(moved["ssl.key.pem"].encode(), None)
    assert loaded.public_key() == key.public_key()


def test_unreadable_files_and_wrong_passwords_are_named(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError) as missing:
        portable(
            {"security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "nope.pem")},
            lambda p: Path(p).read_bytes(),
            "Kafka connection 'kafka_tls'",
        )
    assert "Kafka connection 'kafka_tls' (SSL)" in str(missing.value)
    assert "ssl.ca.location" in str(missing.value) and "nope.pem" in str(missing.value)
    key = pkcs1_key()
    encrypted = (
        serialization.load_pem_private_key(key.encode(), None)
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.BestAvailableEncryption(b"right"),
        )
        .decode()
    )
    with pytest.raises(InvalidInputError) as wrong:
        portable(
            {"security.protocol": "SSL", "ssl.key.pem": encrypted, "ssl.key.password": SECRET},
            no_files,
        )
    assert "ssl.key.pem" in str(wrong.value) and SECRET not in str(wrong.value)


# -- OAUTHBEARER (OIDC) and GSSAPI -------------------------------------------------------------


def oidc(**extra: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "job-client",
        "sasl.oauthbearer.client.secret": SECRET,
        "sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:9/token",
        "ssl.ca.pem": CA,
        **extra,
    }


def test_oidc_gives_the_java_client_the_oauth_login_module() -> None:
    config = oidc(**{"sasl.oauthbearer.scope": "kafka", "sasl.oauthbearer.extensions": "a=1,b=2"})
    check(config)
    options = java_client_options(config)
    assert options["kafka.sasl.mechanism"] == "OAUTHBEARER"
    assert options["kafka.sasl.login.callback.handler.class"] == OAUTH_LOGIN_HANDLER
    assert options["kafka.sasl.oauthbearer.token.endpoint.url"] == "http://127.0.0.1:9/token"
    assert options["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        f'clientId="job-client" clientSecret="{SECRET}" scope="kafka" '
        'extension_a="1" extension_b="2";'
    )
    assert options["kafka.ssl.truststore.certificates"] == CA
    assert not any("client.secret" in k or "oauthbearer.method" in k for k in options)


def test_gssapi_gives_a_keytab_login() -> None:
    config = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "sasl.kerberos.principal": "job@EXAMPLE.TEST",
        "sasl.kerberos.keytab": "/keytabs/job.keytab",
    }
    check(config)
    options = java_client_options(config)
    assert options["kafka.sasl.kerberos.service.name"] == "kafka"
    assert options["kafka.sasl.jaas.config"] == (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
        'keyTab="/keytabs/job.keytab" principal="job@EXAMPLE.TEST";'
    )


def test_a_keytab_travels_embedded(tmp_path: Path) -> None:
    keytab = tmp_path / "job.keytab"
    keytab.write_bytes(b"\x05\x02keytab-bytes")
    config = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.principal": "job@EXAMPLE.TEST",
        "sasl.kerberos.keytab": str(keytab),
    }
    moved = portable(config, lambda p: Path(p).read_bytes())
    assert moved["sasl.kerberos.keytab"] == EMBEDDED + "BQJrZXl0YWItYnl0ZXM="
    assert portable(moved, no_files) == moved  # a second pass reads nothing
    with pytest.raises(InvalidInputError, match=r"sasl\.kerberos\.keytab .*gone"):
        gone = {**config, "sasl.kerberos.keytab": str(tmp_path / "gone")}
        portable(gone, lambda p: Path(p).read_bytes())


# -- settings that do not fit ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"security.protocol": "TLS"}, "security.protocol must be one of"),
        ({"security.protocol": "SSL", "sasl.mechanism": "PLAIN"}, "needs security.protocol SASL"),
        ({"sasl.mechanism": "PLAIN", "sasl.username": "u"}, "needs security.protocol SASL"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "KERBEROS"}, "unknown sasl."),
        ({"security.protocol": "SASL_PLAINTEXT", "ssl.ca.pem": CA}, "ssl.ca.pem needs"),
        ({"security.protocol": "SSL", "ssl.key.pem": "k"}, "needs both ssl.certificate.pem"),
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "u"},
            "PLAIN needs sasl.password",
        ),
        (oidc(**{"sasl.oauthbearer.token.endpoint.url": ""}), "OIDC needs sasl.oauthbearer.token"),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"},
            "GSSAPI needs sasl.kerberos.principal and sasl.kerberos.keytab",
        ),
        (
            {"security.protocol": "SSL", "enable.ssl.certificate.verification": "false"},
            "no Java client equivalent",
        ),
    ],
)
def test_settings_that_do_not_fit_are_refused(config: dict[str, str], named: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        check(config, "Kafka connection 'kafka_x'")
    message = str(refused.value)
    assert message.startswith(f"Kafka connection 'kafka_x' ({describe(config)}): ")
    assert named in message
    assert SECRET not in message


def test_secret_keys_and_redaction() -> None:
    for key in (
        "sasl.password",
        "sasl.oauthbearer.client.secret",
        "ssl.key.pem",
        "ssl.key.password",
        "kafka.ssl.keystore.key",
        "kafka.sasl.jaas.config",
        "sasl.kerberos.keytab",
    ):
        assert is_secret_key(key), key
    for key in ("sasl.oauthbearer.token.endpoint.url", "ssl.ca.pem", "sasl.username"):
        assert not is_secret_key(key), key
    shown = json.dumps(redact(java_client_options(oidc())))
    assert SECRET not in shown
    assert "<PEM, " in shown and "MIIB" not in shown
