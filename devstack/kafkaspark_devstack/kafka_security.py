"""The secured listeners a local Kafka broker may add next to its PLAINTEXT one.

PLAINTEXT stays the inter-broker and setup listener (and CONTROLLER the controllers'); the
secured ones are for the clients under test:

- `SSL`: TLS, the broker proves itself with a certificate the local CA signed;
- `MTLS`: the same, and the client must present a certificate the CA signed
  (`ssl.client.auth=required`);
- `OAUTH`: SASL_PLAINTEXT with OAUTHBEARER, tokens verified against an OIDC issuer's JWKS
  (`OAuthBearerValidatorCallbackHandler`, expected audience and issuer);
- `OAUTH_SSL`: SASL_SSL with OAUTHBEARER (server-verified TLS, then the token), when both
  TLS material and an issuer are given.

The broker reads the TLS material as PEM files (`ssl.keystore.type=PEM`), no JKS.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkaspark_devstack.tls_material import TlsMaterial

SSL = "SSL"
MTLS = "MTLS"
OAUTH = "OAUTH"
OAUTH_SSL = "OAUTH_SSL"

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


@dataclass(frozen=True)
class OAuthValidation:
    """How the broker verifies tokens: the issuer's key set and the claims it expects."""

    jwks_url: str
    issuer: str
    audience: str
    # Listed in the allowed URLs too, so that a broker-side client (none today) could log in.
    token_url: str | None = None


@dataclass(frozen=True)
class BrokerSecurity:
    """Which secured listeners to add: TLS ones with `tls`, OAuth ones with `oauth`."""

    tls: TlsMaterial | None = None
    oauth: OAuthValidation | None = None

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
        return found

    def broker_config(self) -> dict[str, str]:
        """The listeners' settings, each under its listener's `listener.name.<name>.`
        prefix so that PLAINTEXT and CONTROLLER stay as they were."""
        config: dict[str, str] = {}
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
        if self.oauth is None:
            return {}
        urls = [self.oauth.jwks_url, *([self.oauth.token_url] if self.oauth.token_url else [])]
        return {ALLOWED_URLS_PROPERTY: ",".join(urls)}
