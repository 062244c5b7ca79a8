"""One translation from a `kafka` connection to both Kafka clients a job uses.

A `kafka` connection's extra is a librdkafka config (the Airflow Kafka provider's convention):
the provider's own admin calls, probes, lag commits and the exactly-once sink's producers are
librdkafka clients and take it nearly as it is. Spark's Kafka source and sink are Java clients
and know other keys for the same thing. `java_client_options` makes those, per mechanism (the
"Kafka security" table of docs/security.md lists the fields):

- TLS: `ssl.ca.pem` -> a PEM trust store (`ssl.truststore.type=PEM`, `.certificates`);
- mutual TLS: `ssl.certificate.pem` + `ssl.key.pem` -> a PEM key store
  (`ssl.keystore.certificate.chain`, `ssl.keystore.key`), `ssl.key.password` as is;
- PLAIN and SCRAM: `sasl.username` + `sasl.password` -> the mechanism's JAAS login line;
- OAUTHBEARER with `sasl.oauthbearer.method=oidc`: client id, secret, scope -> the JAAS line
  of Kafka's OAuth login module, the token endpoint, Kafka's OIDC login callback handler;
- GSSAPI: `sasl.kerberos.principal` + `sasl.kerberos.keytab` -> Krb5LoginModule's JAAS line.

A driver runs on another host than the connection's reader, so certificates and keys given as
file locations are read where the connection is read and travel as PEM text (`portable`).
A pair of settings that does not fit (a SASL mechanism over plain SSL, a key without a
certificate, OIDC without its token endpoint) is an `InvalidInputError` naming the keys.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_kafkaspark.errors import InvalidInputError

# Keys whose values are secrets: never in a message, a log line, XCom or a shipped file.
SECRET_KEY = re.compile(
    r"password|secret|token(?!\.endpoint)|credential|jaas|oauthbearer\.config|key\.pem$"
    r"|keystore\.key$|keytab",
    re.I,
)

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
OAUTH_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
# In kafka-clients 3.4 (Spark 3.5's connector) to 4.x alike.
OAUTH_LOGIN_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
KERBEROS_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"

# librdkafka settings the Java client does not know: translated below, never passed as is.
_LIBRDKAFKA_ONLY = frozenset(
    {
        "sasl.username",
        "sasl.password",
        "sasl.mechanisms",
        "sasl.oauthbearer.method",
        "sasl.oauthbearer.client.id",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.scope",
        "sasl.oauthbearer.extensions",
        "sasl.kerberos.principal",
        "sasl.kerberos.keytab",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.min.time.before.relogin",
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.certificate.location",
        "ssl.certificate.pem",
        "ssl.key.location",
        "ssl.key.pem",
        "enable.ssl.certificate.verification",
        "api.version.request",
        "broker.version.fallback",
        "socket.keepalive.enable",
    }
)
# File settings a driver on another host cannot read: made PEM text where the connection is read.
_LOCATIONS = {
    "ssl.ca.location": "ssl.ca.pem",
    "ssl.certificate.location": "ssl.certificate.pem",
    "ssl.key.location": "ssl.key.pem",
}


# A file's content carried in its setting, for a driver on another host (a keytab).
EMBEDDED = "base64:"
KEYTAB = "sasl.kerberos.keytab"


def is_secret_key(key: str) -> bool:
    return bool(SECRET_KEY.search(key))


def redact(config: Mapping[str, Any]) -> dict[str, Any]:
    """For logs: secrets masked, and certificates (not secret, but pages long) shortened."""
    shown: dict[str, Any] = {}
    for key, value in config.items():
        if is_secret_key(str(key)):
            shown[key] = "***"
        elif isinstance(value, str) and "-----BEGIN" in value:
            shown[key] = f"<PEM, {len(value)} characters>"
        else:
            shown[key] = value
    return shown


def mechanism_of(config: Mapping[str, Any]) -> str:
    """The SASL mechanism (`sasl.mechanisms` or `sasl.mechanism`), upper case, or ''."""
    raw = config.get("sasl.mechanism") or config.get("sasl.mechanisms") or ""
    return str(raw).strip().upper()


def protocol_of(config: Mapping[str, Any]) -> str:
    return str(config.get("security.protocol") or "PLAINTEXT").strip().upper()


def describe(config: Mapping[str, Any]) -> str:
    """The connection's security in a few words, for messages: `SASL_SSL/OAUTHBEARER`."""
    mechanism = mechanism_of(config)
    return f"{protocol_of(config)}/{mechanism}" if mechanism else protocol_of(config)


def _misfit(where: str, config: Mapping[str, Any], message: str) -> InvalidInputError:
    return InvalidInputError(f"{where} ({describe(config)}): {message}")


def driver_login_gap(config: Mapping[str, Any], token_source: str | None) -> str | None:
    """Why a Spark driver cannot log in with this client config, or None: an OAUTHBEARER
    token that only a callback of Airflow's own process makes (`token_source` names it: the
    MSK IAM signer, Google's token, the extra's `oauth_cb`) reaches neither the driver's Java
    clients nor its librdkafka ones (lag commits, the exactly-once sink)."""
    if token_source is None or mechanism_of(config) != "OAUTHBEARER":
        return None
    if str(config.get("sasl.oauthbearer.method") or "").lower() == "oidc":
        return None
    return (
        f"its OAUTHBEARER token comes from {token_source}, which runs only in Airflow's own "
        f"processes: a Spark driver cannot log in with it (MSK IAM on the driver is not "
        f"supported); give the jobs a connection with an OIDC client-credentials login "
        f"(sasl.oauthbearer.method=oidc), SCRAM or mutual TLS"
    )


def check(config: Mapping[str, Any], where: str = "Kafka connection") -> None:
    """Refuse settings that do not fit together, naming the keys (never a value)."""
    protocol, mechanism = protocol_of(config), mechanism_of(config)
    if protocol not in PROTOCOLS:
        raise _misfit(where, config, f"security.protocol must be one of {', '.join(PROTOCOLS)}")
    sasl = protocol.startswith("SASL_")
    if mechanism and not sasl:
        raise _misfit(
            where,
            config,
            f"sasl.mechanism={mechanism} needs security.protocol SASL_PLAINTEXT or SASL_SSL",
        )
    if sasl and mechanism and mechanism not in (*_JAAS_MODULES, "OAUTHBEARER", "GSSAPI"):
        raise _misfit(where, config, f"unknown sasl.mechanism {mechanism}")
    tls_keys = sorted(k for k in config if str(k).startswith("ssl.") and k in _LIBRDKAFKA_ONLY)
    if tls_keys and not protocol.endswith("SSL"):
        raise _misfit(where, config, f"{tls_keys[0]} needs security.protocol SSL or SASL_SSL")
    has_cert = any(k in config for k in ("ssl.certificate.pem", "ssl.certificate.location"))
    has_key = any(k in config for k in ("ssl.key.pem", "ssl.key.location"))
    if has_cert != has_key:
        raise _misfit(
            where,
            config,
            "mutual TLS needs both ssl.certificate.pem and ssl.key.pem (or .location)",
        )
    if mechanism in _JAAS_MODULES:
        missing = [k for k in ("sasl.username", "sasl.password") if not config.get(k)]
        if missing and "sasl.jaas.config" not in config:
            raise _misfit(where, config, f"{mechanism} needs {' and '.join(missing)}")
    if mechanism == "OAUTHBEARER":
        method = str(config.get("sasl.oauthbearer.method") or "default").lower()
        if method == "oidc":
            needed = (
                "sasl.oauthbearer.client.id",
                "sasl.oauthbearer.client.secret",
                "sasl.oauthbearer.token.endpoint.url",
            )
            missing = [k for k in needed if not config.get(k)]
            if missing:
                raise _misfit(where, config, f"OIDC needs {', '.join(missing)}")
    if mechanism == "GSSAPI":
        missing = [
            k for k in ("sasl.kerberos.principal", "sasl.kerberos.keytab") if not config.get(k)
        ]
        if missing and "sasl.jaas.config" not in config:
            raise _misfit(where, config, f"GSSAPI needs {' and '.join(missing)}")
    if str(config.get("enable.ssl.certificate.verification", "true")).lower() == "false":
        raise _misfit(
            where,
            config,
            "enable.ssl.certificate.verification=false has no Java client equivalent: "
            "give the broker's CA as ssl.ca.pem",
        )


def portable(
    config: Mapping[str, Any],
    read_file: Callable[[str], bytes],
    where: str = "Kafka connection",
) -> dict[str, Any]:
    """The config for a driver on another host: certificate and key files read into PEM text
    (`ssl.ca.location` -> `ssl.ca.pem`, ...), the client key as unencrypted PKCS#8
    (`pkcs8_key`; its password is then spent), and a keytab's bytes embedded in its setting
    (`EMBEDDED` + base64; the driver writes it back to a private file: `spark/secrets.py`).
    librdkafka's `probe` (the system's CA store) stays a location. `read_file` raises
    OSError for a file it cannot read."""
    result = dict(config)
    for location, pem in _LOCATIONS.items():
        path = result.get(location)
        if path is None or (location == "ssl.ca.location" and str(path) == "probe"):
            continue
        if pem in result:
            raise _misfit(where, config, f"give {location} or {pem}, not both")
        result[pem] = _read(read_file, location, str(path), where, config).decode()
        del result[location]
    if result.get("ssl.key.pem"):
        result["ssl.key.pem"] = pkcs8_key(
            str(result["ssl.key.pem"]), result.pop("ssl.key.password", None), where, config
        )
    keytab = result.get(KEYTAB)
    if keytab and not str(keytab).startswith(EMBEDDED):
        content = _read(read_file, KEYTAB, str(keytab), where, config)
        result[KEYTAB] = EMBEDDED + base64.b64encode(content).decode()
    return result


def _read(
    read_file: Callable[[str], bytes], key: str, path: str, where: str, config: Mapping[str, Any]
) -> bytes:
    try:
        return read_file(path)
    except OSError as exc:
        raise _misfit(
            where, config, f"{key} {path!r} cannot be read ({exc.strerror or exc})"
        ) from None


def pkcs8_key(pem: str, password: Any, where: str, config: Mapping[str, Any]) -> str:
    """A PEM private key as unencrypted PKCS#8 (`BEGIN PRIVATE KEY`), the one form both
    clients read: the Java client of kafka-clients 3.4 to 4.1 on Java 17 refuses a key
    encrypted with PBES2 (what current tools write), librdkafka reads either. The key is a
    secret all the same: it travels as one (`core/spec/secret_env.py`)."""
    if "BEGIN PRIVATE KEY" in pem and not password:
        return pem
    from cryptography.hazmat.primitives import serialization

    secret = str(password).encode() if password else None
    try:
        key = serialization.load_pem_private_key(pem.encode(), password=secret)
    except (ValueError, TypeError) as exc:
        # The type only: the reason may quote key material.
        raise _misfit(
            where,
            config,
            f"ssl.key.pem is not a PEM private key that ssl.key.password opens "
            f"({type(exc).__name__})",
        ) from None
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def jaas_quote(value: str) -> str:
    """A JAAS option value: double-quoted, with backslashes and quotes escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _jaas(module: str, options: Mapping[str, str], flags: Mapping[str, str] | None = None) -> str:
    parts = [module, "required"]
    parts += [f"{k}={v}" for k, v in (flags or {}).items()]
    parts += [f"{k}={jaas_quote(v)}" for k, v in options.items()]
    return " ".join(parts) + ";"


def _tls_options(config: Mapping[str, Any]) -> dict[str, str]:
    options: dict[str, str] = {}
    if config.get("ssl.ca.pem"):
        options["ssl.truststore.type"] = "PEM"
        options["ssl.truststore.certificates"] = str(config["ssl.ca.pem"])
    if config.get("ssl.certificate.pem") and config.get("ssl.key.pem"):
        options["ssl.keystore.type"] = "PEM"
        options["ssl.keystore.certificate.chain"] = str(config["ssl.certificate.pem"])
        options["ssl.keystore.key"] = str(config["ssl.key.pem"])
    algorithm = config.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        options["ssl.endpoint.identification.algorithm"] = (
            "" if str(algorithm).lower() == "none" else str(algorithm)
        )
    return options


def _sasl_options(config: Mapping[str, Any]) -> dict[str, str]:
    mechanism = mechanism_of(config)
    options = {"sasl.mechanism": mechanism} if mechanism else {}
    if "sasl.jaas.config" in config:
        return options
    if mechanism in _JAAS_MODULES and config.get("sasl.username") is not None:
        credentials = {
            "username": str(config["sasl.username"]),
            "password": str(config.get("sasl.password") or ""),
        }
        options["sasl.jaas.config"] = _jaas(_JAAS_MODULES[mechanism], credentials)
    elif (
        mechanism == "OAUTHBEARER" and str(config.get("sasl.oauthbearer.method")).lower() == "oidc"
    ):
        login = {
            "clientId": str(config["sasl.oauthbearer.client.id"]),
            "clientSecret": str(config["sasl.oauthbearer.client.secret"]),
        }
        if config.get("sasl.oauthbearer.scope"):
            login["scope"] = str(config["sasl.oauthbearer.scope"])
        for pair in str(config.get("sasl.oauthbearer.extensions") or "").split(","):
            name, _, value = pair.partition("=")
            if name.strip():
                login[f"extension_{name.strip()}"] = value.strip()
        options["sasl.login.callback.handler.class"] = OAUTH_LOGIN_HANDLER
        options["sasl.jaas.config"] = _jaas(OAUTH_LOGIN_MODULE, login)
    elif mechanism == "GSSAPI" and config.get("sasl.kerberos.keytab"):
        options["sasl.jaas.config"] = _jaas(
            KERBEROS_LOGIN_MODULE,
            {
                "keyTab": str(config["sasl.kerberos.keytab"]),
                "principal": str(config.get("sasl.kerberos.principal") or ""),
            },
            {"useKeyTab": "true", "storeKey": "true"},
        )
    return options


def java_client_options(
    config: Mapping[str, Any],
    given: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The `kafka.`-prefixed options of Spark's Kafka source or sink (a Java client) for a
    connection's librdkafka config; they win over the job spec's own options (`given`), except
    that a JAAS line given there is kept. Settings both clients know pass as they are;
    `bootstrap.servers` is the caller's. A key passes as `portable` left it: PKCS#8, the form
    the Java client reads."""
    given = given or {}
    options: dict[str, str] = {}
    for key, value in config.items():
        if key == "bootstrap.servers" or key in _LIBRDKAFKA_ONLY:
            continue
        options[str(key)] = str(value)
    options.update(_tls_options(config))
    sasl = _sasl_options(config)
    if "kafka.sasl.jaas.config" in given:
        sasl.pop("sasl.jaas.config", None)
        sasl.pop("sasl.login.callback.handler.class", None)
    options.update(sasl)
    return {f"kafka.{k}": v for k, v in options.items()}
