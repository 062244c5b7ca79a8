"""A kerberized Kafka listener (SASL_PLAINTEXT with GSSAPI) against the local realm: the Java
client, with the JAAS line `core/kafka/security.java_client_options` makes of a `kafka`
connection's Kerberos fields, reads through it; a keytab that does not hold the principal's
keys is refused. librdkafka as the confluent-kafka wheel builds it has no GSSAPI (no
libsasl2): a test says so, so that it fails, and points here, the day the wheel has it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest

from airflow_provider_kafkaspark.core.kafka.security import check, java_client_options
from kafkaspark_devstack.jars import bundle_jars
from kafkaspark_devstack.java_probe import java_consume
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.kafka_security import GSSAPI, BrokerSecurity, KerberosService
from kafkaspark_devstack.kdc import LocalKdc
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.kerberos.conftest import CLIENT, KAFKA_SERVICE

TOPIC = "kerberized"
RECORDS = 5


@pytest.fixture(scope="module")
def kafka(kdc: LocalKdc, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    service = KerberosService(
        principal=kdc.principal(KAFKA_SERVICE),
        keytab=str(kdc.add_principal(KAFKA_SERVICE)),
        krb5_conf=str(kdc.krb5_conf_path),
    )
    cluster = LocalKafkaCluster(
        tmp_path_factory.mktemp("kafka-krb"), security=BrokerSecurity(kerberos=service)
    )
    try:
        cluster.start()
        create_topic(cluster.bootstrap_servers, TOPIC, 1)
        produce_numbered(cluster.bootstrap_servers, TOPIC, RECORDS)
        yield cluster
    finally:
        cluster.stop()


def connection(kafka: LocalKafkaCluster, kdc: LocalKdc, keytab: Path) -> dict[str, str]:
    """A `kafka` connection's extra for the GSSAPI listener (librdkafka's keys)."""
    return {
        "bootstrap.servers": kafka.listener_servers(GSSAPI),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "sasl.kerberos.principal": kdc.principal(CLIENT),
        "sasl.kerberos.keytab": str(keytab),
    }


def java_settings(config: dict[str, str]) -> dict[str, str]:
    check(config)
    options = java_client_options(config)
    return {
        "bootstrap.servers": config["bootstrap.servers"],
        **{k.removeprefix("kafka."): v for k, v in options.items()},
    }


def test_the_java_client_reads_through_the_gssapi_listener(
    kafka: LocalKafkaCluster, kdc: LocalKdc, tmp_path: Path
) -> None:
    settings = java_settings(connection(kafka, kdc, kdc.add_principal(CLIENT)))
    assert "Krb5LoginModule" in settings["sasl.jaas.config"]
    result = java_consume(
        tmp_path,
        bundle_jars("kafka"),
        settings,
        TOPIC,
        expect=RECORDS,
        system_properties={"java.security.krb5.conf": str(kdc.krb5_conf_path)},
    )
    assert result.ok and result.records >= RECORDS, result.output[-3000:]
    assert f"{kdc.principal(CLIENT)} for {kdc.principal(KAFKA_SERVICE)}" in kdc.log_tail(400)


def test_a_keytab_without_the_principal_keys_is_refused(
    kafka: LocalKafkaCluster, kdc: LocalKdc, tmp_path: Path
) -> None:
    other = kdc.add_principal("not-the-client")
    result = java_consume(
        tmp_path,
        bundle_jars("kafka"),
        java_settings(connection(kafka, kdc, other)),
        TOPIC,
        expect=RECORDS,
        timeout_s=15,
        system_properties={"java.security.krb5.conf": str(kdc.krb5_conf_path)},
    )
    assert result.returncode == 2, result.output[-3000:]
    assert any("LoginException" in e or "login" in e.lower() for e in result.errors), result.errors


def test_the_confluent_kafka_wheel_has_no_gssapi(kafka: LocalKafkaCluster, kdc: LocalKdc) -> None:
    """The provider's own librdkafka clients (admin calls, probes, lag commits, the
    exactly-once sink) cannot use a GSSAPI connection with this wheel; the drivers' Spark
    source and sink (Java) can. When this fails, the wheel has GSSAPI: test produce and
    consume through it here."""
    config = connection(kafka, kdc, kdc.add_principal(CLIENT))
    config["sasl.mechanisms"] = config.pop("sasl.mechanism")
    with pytest.raises(
        confluent_kafka.KafkaException, match="No provider for SASL mechanism GSSAPI"
    ):
        confluent_kafka.Producer(config)


def test_spark_reads_through_the_gssapi_listener(kafka: LocalKafkaCluster, kdc: LocalKdc) -> None:
    """Spark 4.0's Kafka source (its own kafka-clients) with the connection's options, as a
    driver gets them: the batch read a job's source makes, over Kerberos."""
    from airflow_provider_kafkaspark.spark.local_session import local_spark_session

    config = connection(kafka, kdc, kdc.add_principal(CLIENT))
    check(config)
    krb5 = f"-Djava.security.krb5.conf={kdc.krb5_conf_path}"
    spark = local_spark_session("kafkaspark-krb", conf={"spark.driver.extraJavaOptions": krb5})
    try:
        frame = (
            spark.read.format("kafka")
            .options(**java_client_options(config))
            .option("kafka.bootstrap.servers", config["bootstrap.servers"])
            .option("subscribe", TOPIC)
            .option("startingOffsets", "earliest")
            .option("endingOffsets", "latest")
            .load()
        )
        values = {row.value.decode() for row in frame.select("value").collect()}
    finally:
        spark.stop()
    assert {str(i) for i in range(RECORDS)} <= values
