"""The local broker's SCRAM listener and authorizer settings, and the ACL bindings the dev
stack grants, without a JVM (tests/integration/test_job_acls.py runs them for real)."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka.admin import (
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from airflow_provider_kafkaspark.core.kafka.acls import JobAcl
from airflow_provider_kafkaspark.core.kafka.security import java_client_options
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.kafka_acls import acl_binding, acl_key, scram_client_config
from kafkaspark_devstack.kafka_security import (
    AUTHORIZER,
    GSSAPI,
    SCRAM,
    BrokerSecurity,
    KerberosService,
    OAuthValidation,
)


def test_the_scram_listener_and_the_authorizer(tmp_path: Path) -> None:
    security = BrokerSecurity(scram=True, authorizer=True)
    assert security.listeners() == {SCRAM: "SASL_PLAINTEXT"}
    cluster = LocalKafkaCluster(tmp_path, port=19092, security=security)
    config = cluster._node_config(cluster.node(1))
    port = cluster.node(1).listener_ports[SCRAM]
    assert config["listeners"].endswith(f",SCRAM://127.0.0.1:{port}")
    assert config["listener.security.protocol.map"].endswith(",SCRAM:SASL_PLAINTEXT")
    assert config["inter.broker.listener.name"] == "PLAINTEXT"
    assert config["listener.name.scram.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert config["listener.name.scram.scram-sha-512.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    )
    assert config["authorizer.class.name"] == AUTHORIZER
    # PLAINTEXT's and the controllers' principal keeps every right; no one else gets any
    # unless an ACL says so.
    assert config["super.users"] == "User:ANONYMOUS"
    assert config["allow.everyone.if.no.acl.found"] == "false"
    assert cluster.listener_servers("scram") == f"127.0.0.1:{port}"


def test_no_authorizer_unless_asked_and_scram_beside_other_sasl_listeners() -> None:
    assert "authorizer.class.name" not in BrokerSecurity(scram=True).broker_config()
    oauth = OAuthValidation("http://i/jwks", "http://i", "kafka")
    kerberos = KerberosService("kafka/localhost@R", "/k/kafka", "/k/c")
    security = BrokerSecurity(oauth=oauth, kerberos=kerberos, scram=True)
    config = security.broker_config()
    assert list(security.listeners()) == ["OAUTH", GSSAPI, SCRAM]
    # Each SASL listener gets its own mechanism only.
    assert config["listener.name.scram.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert config["listener.name.oauth.sasl.enabled.mechanisms"] == "OAUTHBEARER"
    assert not any(k.startswith("listener.name.scram.sasl.oauthbearer") for k in config)


def test_the_client_config_and_its_java_translation() -> None:
    config = scram_client_config("127.0.0.1:1", "job", "pw")
    assert config == {
        "bootstrap.servers": "127.0.0.1:1",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "job",
        "sasl.password": "pw",
    }
    java = java_client_options(config)
    assert java["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert 'username="job"' in java["kafka.sasl.jaas.config"]


def test_a_job_acl_becomes_an_allow_binding_for_any_host() -> None:
    acl = JobAcl("TRANSACTIONAL_ID", "PREFIXED", "orders-", "WRITE", "b:9092", "executors", "x")
    binding = acl_binding("User:job", acl)
    assert binding.restype == ResourceType.TRANSACTIONAL_ID
    assert binding.resource_pattern_type == ResourcePatternType.PREFIXED
    assert binding.name == "orders-" and binding.principal == "User:job" and binding.host == "*"
    assert binding.operation == AclOperation.WRITE
    assert binding.permission_type == AclPermissionType.ALLOW
    assert acl_key(acl) == ("TRANSACTIONAL_ID", "PREFIXED", "orders-", "WRITE")
