"""SCRAM users and ACLs on a local broker whose authorizer is on, made through its PLAINTEXT
listener (whose principal, `User:ANONYMOUS`, is the super user: kafka_security.py).

    cluster = LocalKafkaCluster(base, security=BrokerSecurity(scram=True, authorizer=True))
    cluster.start()
    add_scram_user(cluster.bootstrap_servers, "job", "secret")
    grant(cluster.bootstrap_servers, "User:job", job_acls(spec))
    client = scram_client_config(cluster.listener_servers(SCRAM), "job", "secret")

Kafka keeps both in its metadata log (KRaft): no file, nothing at format time. Each call
returns once the broker answers with the change, so a client may use it at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.core.kafka.acls import JobAcl
from airflow_provider_kafkaspark.errors import BrokerStartError
from kafkaspark_devstack.kafka_security import SCRAM_MECHANISM

if TYPE_CHECKING:
    from confluent_kafka.admin import AclBinding, AdminClient

# An ACL as the broker lists it: resource type, pattern type, name, operation (all ALLOW, any
# host).
AclKey = tuple[str, str, str, str]


def scram_client_config(servers: str, user: str, password: str) -> dict[str, str]:
    """A librdkafka client config (a `kafka` connection's extra) that logs in as `user`."""
    return {
        "bootstrap.servers": servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": SCRAM_MECHANISM,
        "sasl.username": user,
        "sasl.password": password,
    }


def add_scram_user(
    admin_servers: str,
    user: str,
    password: str,
    *,
    timeout: float = 30.0,
    login_servers: str | None = None,
) -> None:
    """Create (or replace) `user`'s SCRAM-SHA-512 credential through the super user's
    listener; with `login_servers` (the SCRAM listener), wait until the user logs in there."""
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = _admin(admin_servers)
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password.encode()
    )
    futures = admin.alter_user_scram_credentials([upsert], request_timeout=timeout)
    for future in futures.values():
        future.result(timeout + 10)
    if login_servers is not None:
        _wait_for_login(scram_client_config(login_servers, user, password), timeout)


def _wait_for_login(config: dict[str, str], timeout: float) -> None:
    from confluent_kafka.admin import AdminClient

    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        try:
            AdminClient({**config, "log_level": 0}).list_topics(timeout=3)
            return
        except Exception as exc:  # noqa: BLE001 - refused until the credential is there
            last = str(exc)
        time.sleep(0.5)
    raise BrokerStartError(
        f"user {config['sasl.username']} could not log in on {config['bootstrap.servers']} "
        f"within {timeout:g}s after its SCRAM credential was made: {last}"
    )


def acl_binding(principal: str, acl: JobAcl) -> AclBinding:
    """The ALLOW binding (any host) of `acl` for `principal` (`User:name`)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    return AclBinding(
        ResourceType[acl.resource_type],
        acl.name,
        ResourcePatternType[acl.pattern_type],
        principal,
        "*",
        AclOperation[acl.operation],
        AclPermissionType.ALLOW,
    )


def grant(
    admin_servers: str, principal: str, acls: Iterable[JobAcl], *, timeout: float = 30.0
) -> None:
    """Add `acls` for `principal`, then wait until the broker lists them all (its authorizer
    applies them from the metadata log, a moment after the controller took them)."""
    wanted = list(acls)
    admin = _admin(admin_servers)
    futures = admin.create_acls(
        [acl_binding(principal, acl) for acl in wanted], request_timeout=timeout
    )
    for future in futures.values():
        future.result(timeout + 10)
    keys = {acl_key(acl) for acl in wanted}
    deadline = time.monotonic() + timeout
    while not keys <= acls_of(admin_servers, principal, timeout=timeout):
        if time.monotonic() > deadline:
            raise BrokerStartError(
                f"the ACLs of {principal} were not listed by {admin_servers} within {timeout:g}s"
            )
        time.sleep(0.2)


def acl_key(acl: JobAcl) -> AclKey:
    return (acl.resource_type, acl.pattern_type, acl.name, acl.operation)


def acls_of(admin_servers: str, principal: str, *, timeout: float = 30.0) -> set[AclKey]:
    """Every ACL the broker has for `principal`, as (resource type, pattern type, name,
    operation); DENY ones too, which `grant` never makes."""
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    # None matches any name and any host (confluent-kafka's hints say str).
    query = AclBindingFilter(
        ResourceType.ANY,
        None,  # type: ignore[arg-type]
        ResourcePatternType.ANY,
        principal,
        None,  # type: ignore[arg-type]
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    # The client must outlive the answer: a client destroyed meanwhile fails its futures.
    admin = _admin(admin_servers)
    bindings: Any = admin.describe_acls(query, request_timeout=timeout).result(timeout + 10)
    return {
        (b.restype.name, b.resource_pattern_type.name, b.name, b.operation.name) for b in bindings
    }


def _admin(servers: str) -> AdminClient:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": servers, "log_level": 0})
