"""A local Kafka broker with its secured listeners and what they need, started and stopped
as one: the TLS material, the OIDC issuer (before the broker, which fetches the issuer's
JWKS), and the cluster with SSL, MTLS, OAUTH and OAUTH_SSL listeners next to PLAINTEXT.

    with secure_kafka(tmp_path) as stack:
        stack.servers(MTLS)          # "127.0.0.1:<port>"
        stack.tls.client_cert        # PEM files, see tls_material.py
        stack.issuer.client()        # token URL, client id and secret
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.kafka_security import BrokerSecurity
from kafkaspark_devstack.oidc_issuer import LocalOidcIssuer
from kafkaspark_devstack.tls_material import TlsMaterial, make_tls_material


@dataclass(frozen=True)
class SecureKafka:
    cluster: LocalKafkaCluster
    tls: TlsMaterial
    issuer: LocalOidcIssuer

    @property
    def plaintext_servers(self) -> str:
        """The unsecured listener, for setup (topics, test records)."""
        return self.cluster.bootstrap_servers

    def servers(self, listener: str) -> str:
        """The bootstrap servers of a secured listener (kafka_security.SSL, MTLS, ...)."""
        return self.cluster.listener_servers(listener)


@contextmanager
def secure_kafka(
    base_dir: str | os.PathLike[str],
    *,
    brokers: int = 1,
    clients: Mapping[str, str] | None = None,
    broker_config: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> Iterator[SecureKafka]:
    """Start the issuer, then the broker(s); both are stopped on leaving, also when the start
    failed half-way (ExitStack unwinds what was entered)."""
    base = Path(base_dir).resolve()
    tls = make_tls_material(base / "tls")
    with ExitStack() as stack:
        issuer = stack.enter_context(LocalOidcIssuer(base / "oidc", clients=clients))
        cluster = LocalKafkaCluster(
            base / "kafka",
            brokers=brokers,
            broker_config=broker_config,
            security=BrokerSecurity(tls=tls, oauth=issuer.broker_validation()),
        )
        # Registered before the start: LocalKafkaCluster.start kills what it started when
        # it fails, and a stop of a stopped cluster does nothing.
        stack.callback(cluster.stop)
        cluster.start(timeout=timeout)
        yield SecureKafka(cluster, tls, issuer)
