"""The secured listeners a local Kafka broker may add next to its PLAINTEXT one.

PLAINTEXT stays the inter-broker and setup listener (and CONTROLLER the controllers'); the
secured ones are for the clients under test:

- `SSL`: TLS, the broker proves itself with a certificate the local CA signed;
- `MTLS`: the same, and the client must present a certificate the CA signed
  (`ssl.client.auth=required`);
- `OAUTH`: SASL_PLAINTEXT with OAUTHBEARER, tokens verified against an OIDC issuer's JWKS
  (`OAuthBearerValidatorCallbackHandler`, expected audience and issuer);
- `OAUTH_SSL`: SASL_SSL with OAUTHBEARER (server-verified TLS, then the token), when both
  TLS material and an issuer are given;
- `GSSAPI`: SASL_PLAINTEXT with Kerberos (the broker's `kafka/localhost` keytab, a local
  MIT KDC's realm: kdc.py); clients ask for service `kafka` on the host they reach, and the
  broker's 127.0.0.1 reads back as `localhost` (/etc/hosts), the principal's host.
- `SCRAM`: SASL_PLAINTEXT with SCRAM-SHA-512; its users are made through PLAINTEXT once the
  broker runs (kafka_acls.add_scram_user: Kafka keeps SCRAM credentials in its metadata).

`authorizer=True` turns Kafka's ACLs on (KRaft's StandardAuthorizer): a principal may do only
what an ACL allows it (`allow.everyone.if.no.acl.found=false`), except `User:ANONYMOUS`, the
principal of PLAINTEXT, CONTROLLER and the TLS listeners without client certificates, which is
a super user, so that inter-broker traffic and test setup go on as before (kafka_acls.py makes
users and grants ACLs through it). The SCRAM, MTLS, OAUTH and GSSAPI listeners' principals
are the ones ACLs apply to.

The broker reads the TLS material as PEM files (`ssl.keystore.type=PEM`), no JKS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Only a type here: the Spark-release driver environments that import the launcher (the
    # test matrix) have no `cryptography`, which making the material needs.
    from kafkaspark_devstack.tls_material import TlsMaterial

SSL = "SSL"
MTLS = "MTLS"
OAUTH = "OAUTH"
OAUTH_SSL = "OAUTH_SSL"
GSSAPI = "GSSAPI"
SCRAM = "SCRAM"
SCRAM_MECHANISM = "SCRAM-SHA-512"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
KERBEROS_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"

# Kafka 4.x fetches OAuth URLs (JWKS, token endpoint) only when this JVM system property
# lists them (ConfigurationUtils.throwIfURLIsNotAllowed; the default allows none).
ALLOWED_URLS_PROPERTY = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
_OAUTH = "org.apache.kafka.common.security.oauthbearer"
VALIDATOR_HANDLER = f"{_OAUTH}.OAuthBearerValidatorCallbackHandler"
LOGIN_MODULE = f"{_OAUTH}.OAuthBearerLoginModule"
# The Java client's login handler for the client-credentials grant: this name in kafka-clients
# 3.4 and later (Spark 3.5's 3.4.1, Spark 4.0's 3.9.0, Kafka 4.1's own); 3.x also keeps the
# deprecated `...oauthbearer.secured.OAuthBearerLoginCallbackHandler`, which 4.0 removed.
LOGIN_HANDLER = f"{_OAUTH}.OAuthBearerLoginCallbackHandler"

# KRaft's ACL authorizer, and the principal every unauthenticated listener gives.
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SUPER_USER = "User:ANONYMOUS"


@dataclass(frozen=True)
class OAuthValidation:
    """How the broker verifies tokens: the issuer's key set and the claims it expects."""

    jwks_url: str
    issuer: str
    audience: str
    # Listed in the allowed URLs too, so that a broker-side client (none today) could log in.
    token_url: str | None = None


@dataclass(frozen=True)
class KerberosService:
    """The broker's Kerberos identity: its service principal (`kafka/localhost@REALM`), that
    principal's keytab, and the realm's krb5.conf (for the broker's JVM)."""

    principal: str
    keytab: str
    krb5_conf: str
    service_name: str = "kafka"


@dataclass(frozen=True)
class BrokerSecurity:
    """Which secured listeners to add: TLS ones with `tls`, OAuth ones with `oauth`, the
    Kerberos one with `kerberos`, the SCRAM one with `scram`; `authorizer` turns ACLs on."""

    tls: TlsMaterial | None = None
    oauth: OAuthValidation | None = None
    kerberos: KerberosService | None = None
    scram: bool = False
    authorizer: bool = False

    def listeners(self) -> dict[str, str]:
        """Listener name -> security protocol."""
        found: dict[str, str] = {}
        if self.tls is not None:
            found[SSL] = "SSL"
            found[MTLS] = "SSL"
        if self.oauth is not None:
            found[OAUTH] = "SASL_PLAINTEXT"
            if self.tls is not None:
                found[OAUTH_SSL] = "SASL_SSL"
        if self.kerberos is not None:
            found[GSSAPI] = "SASL_PLAINTEXT"
        if self.scram:
            found[SCRAM] = "SASL_PLAINTEXT"
        return found

    def broker_config(self) -> dict[str, str]:
        """The listeners' settings, each under its listener's `listener.name.<name>.`
        prefix so that PLAINTEXT and CONTROLLER stay as they were."""
        config: dict[str, str] = {}
        if self.authorizer:
            config.update(
                {
                    "authorizer.class.name": AUTHORIZER,
                    "super.users": SUPER_USER,
                    "allow.everyone.if.no.acl.found": "false",
                }
            )
        for name, protocol in self.listeners().items():
            prefix = f"listener.name.{name.lower()}."
            if protocol in ("SSL", "SASL_SSL") and self.tls is not None:
                config.update(
                    {
                        f"{prefix}ssl.keystore.type": "PEM",
                        f"{prefix}ssl.keystore.location": str(self.tls.server_keystore),
                        f"{prefix}ssl.truststore.type": "PEM",
                        f"{prefix}ssl.truststore.location": str(self.tls.ca_cert),
                        f"{prefix}ssl.client.auth": "required" if name == MTLS else "none",
                    }
                )
            if name == GSSAPI and self.kerberos is not None:
                service = self.kerberos
                config.update(
                    {
                        f"{prefix}sasl.enabled.mechanisms": "GSSAPI",
                        f"{prefix}gssapi.sasl.jaas.config": (
                            f"{KERBEROS_LOGIN_MODULE} required useKeyTab=true storeKey=true "
                            f'keyTab="{service.keytab}" principal="{service.principal}";'
                        ),
                        f"{prefix}sasl.kerberos.service.name": service.service_name,
                    }
                )
                continue
            if name == SCRAM:
                config.update(
                    {
                        f"{prefix}sasl.enabled.mechanisms": SCRAM_MECHANISM,
                        f"{prefix}{SCRAM_MECHANISM.lower()}.sasl.jaas.config": (
                            f"{SCRAM_LOGIN_MODULE} required;"
                        ),
                    }
                )
                continue
            if protocol.startswith("SASL_") and self.oauth is not None:
                config.update(
                    {
                        f"{prefix}sasl.enabled.mechanisms": "OAUTHBEARER",
                        f"{prefix}oauthbearer.sasl.jaas.config": f"{LOGIN_MODULE} required ;",
                        f"{prefix}oauthbearer.sasl.server.callback.handler.class": (
                            VALIDATOR_HANDLER
                        ),
                        f"{prefix}sasl.oauthbearer.jwks.endpoint.url": self.oauth.jwks_url,
                        f"{prefix}sasl.oauthbearer.expected.audience": self.oauth.audience,
                        f"{prefix}sasl.oauthbearer.expected.issuer": self.oauth.issuer,
                    }
                )
        return config

    def system_properties(self) -> dict[str, str]:
        found: dict[str, str] = {}
        if self.kerberos is not None:
            # Java's Kerberos reads the realm's KDC from here, not from KRB5_CONFIG.
            found["java.security.krb5.conf"] = self.kerberos.krb5_conf
        if self.oauth is not None:
            urls = [self.oauth.jwks_url, *([self.oauth.token_url] if self.oauth.token_url else [])]
            found[ALLOWED_URLS_PROPERTY] = ",".join(urls)
        return found
