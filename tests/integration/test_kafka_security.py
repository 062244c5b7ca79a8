"""The lifecycle over secured Kafka listeners, from one `kafka` connection per mechanism: TLS
with server verification, mutual TLS (an encrypted client key, files read where the
connection is read), and SASL_SSL/OAUTHBEARER with OIDC client credentials against the local
stack's token endpoint.

For each: the submit (its probe), a real Spark driver whose Java source and sink clients and
whose librdkafka clients (lag commits, the exactly-once sink's producers) all log in with the
translated settings, the health sensor, lag commits in the job's consumer group, the
reconcile operator, a stop, the sink read `read_committed` (every record once), and the
`kafkaspark` CLI (bootstrap probe and reconcile) with the same settings in a properties file.
The driver's spec file holds no secret. Then the bad inputs: a wrong CA, an expired client
certificate, a token endpoint that refuses the client: each fails the task at once with a
typed error naming the connection and the mechanism, never a secret."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from kafkaspark_devstack.kafka_security import MTLS, OAUTH_SSL, SSL
from kafkaspark_devstack.secure_kafka import SecureKafka, secure_kafka
from tests.integration.cli_util import cli
from tests.integration.kafka_util import create_topic, produce_numbered, read_all_values
from tests.lifecycle_story import OutletEvents

RECORDS = 300
PROBE_S = 15.0
AT_ONCE_S = 10.0


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureKafka]:
    with secure_kafka(tmp_path_factory.mktemp("secure-kafka")) as secured:
        yield secured


def extra_for(stack: SecureKafka, mechanism: str) -> dict[str, str]:
    """The connection's extra, as a user writes it for each mechanism."""
    tls = stack.tls
    if mechanism == "tls":
        return {
            "bootstrap.servers": stack.servers(SSL),
            "security.protocol": "SSL",
            "ssl.ca.location": str(tls.ca_cert),
        }
    if mechanism == "mtls":
        return {
            "bootstrap.servers": stack.servers(MTLS),
            "security.protocol": "SSL",
            "ssl.ca.pem": tls.ca_pem,
            "ssl.certificate.location": str(tls.client_cert),
            "ssl.key.location": str(tls.client_key_encrypted),
            "ssl.key.password": tls.client_key_password,
        }
    client = stack.issuer.client()
    return {
        "bootstrap.servers": stack.servers(OAUTH_SSL),
        "security.protocol": "SASL_SSL",
        "ssl.ca.pem": tls.ca_pem,
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": client.client_id,
        "sasl.oauthbearer.client.secret": client.client_secret,
        "sasl.oauthbearer.token.endpoint.url": client.token_url,
        "sasl.oauthbearer.scope": client.scope,
    }


def secrets_of(stack: SecureKafka) -> list[str]:
    key_body = "".join(stack.tls.client_key_pem.splitlines()[1:-1])[:40]
    return [stack.tls.client_key_password, stack.issuer.client().client_secret, key_body]


def use_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, extra: dict[str, str]) -> None:
    value = json.dumps({"conn_type": "kafka", "extra": extra})
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", value)


def spec_for(name: str, tmp_path: Path) -> dict[str, Any]:
    return {
        "job_name": name,
        "source": {"bootstrap_servers": "from-connection:9092", "subscribe": [f"{name}_in"]},
        "sql": "SELECT key, value FROM source",
        "sink": {"kind": "kafka_exactly_once", "topic": f"{name}_out"},
        "checkpoint_location": str(tmp_path / "checkpoint"),
        "trigger_interval": "1 second",
        "spark_conf": {"spark.sql.shuffle.partitions": "2"},
    }


@pytest.mark.parametrize(
    "mechanism",
    [
        pytest.param("tls", marks=pytest.mark.extended(covered_by="the mtls case (TLS and more)")),
        "mtls",
        "oidc",
    ],
)
def test_the_lifecycle_over_a_secured_listener(
    mechanism: str, stack: SecureKafka, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator
    from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator
    from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
    from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor

    name = f"sec_{mechanism}"
    conn_id = f"kafka_{mechanism}"
    extra = extra_for(stack, mechanism)
    use_connection(monkeypatch, conn_id, extra)
    plain = stack.plaintext_servers
    create_topic(plain, f"{name}_in", 2)
    create_topic(plain, f"{name}_out", 2)
    produce_numbered(plain, f"{name}_in", RECORDS)
    started = time.monotonic()
    handle = SubmitStreamingJobOperator(
        task_id="submit",
        job_spec=spec_for(name, tmp_path),
        kafka_conn_id=conn_id,
        workdir=str(tmp_path / "drivers"),
        probe_timeout_s=PROBE_S,
    ).execute(cast(Context, {}))
    healthy = StreamingHealthSensor(
        task_id="health",
        handle=handle,
        kafka_conn_id=conn_id,
        min_new_batches=1,
        poll_interval_s=1,
        timeout=240,
        deferrable=False,
    ).execute(cast(Context, {}))
    assert healthy["state"] == "healthy", healthy

    def group_total() -> int:
        with KafkaFacade({"bootstrap.servers": plain}) as kafka:
            offsets = kafka.group_offsets(f"kafkaspark.{name}")
        return sum(sum(p.values()) for p in offsets.values())

    deadline = time.monotonic() + 120
    while group_total() < RECORDS and time.monotonic() < deadline:
        time.sleep(1)
    assert group_total() == RECORDS, "the driver's lag commits did not reach the end"
    pushed: dict[str, Any] = {}
    ti = SimpleNamespace(xcom_push=lambda key, value: pushed.update({key: value}))
    plan = KafkaPartitionReconcileOperator(
        task_id="reconcile", checkpoint=str(tmp_path / "checkpoint"), kafka_conn_id=conn_id
    ).execute(cast(Context, {"ti": ti}))
    assert plan["lag"]["total_records"] == 0 and pushed["lag"]["total_records"] == 0, plan

    # The CLI with the same settings in a properties file (a person at a terminal).
    properties = tmp_path / "client.properties"
    settings = {k: v for k, v in extra.items() if k != "bootstrap.servers"}
    properties.write_text("".join(f"{k}={v}\n" for k, v in settings.items() if "\n" not in v))
    if "ssl.ca.pem" in settings:
        properties.write_text(properties.read_text() + f"ssl.ca.location={stack.tls.ca_cert}\n")
    flags = ["--bootstrap-servers", extra["bootstrap.servers"], "--kafka-config-file"]
    probe = cli("kafka", "probe-bootstrap", *flags, str(properties), "--json")
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout)["healthy"] is True
    reconciled = cli("reconcile", str(tmp_path / "checkpoint"), *flags, str(properties), "--json")
    assert reconciled.returncode == 0, reconciled.stderr
    assert json.loads(reconciled.stdout)["lag"]["total_records"] == 0

    stopped = StopStreamingJobOperator(
        task_id="stop",
        handle=handle,
        savepoint_root=str(tmp_path / "savepoints"),
        deferrable=False,
        poll_interval_s=0.5,
    ).execute(cast(Context, {"outlet_events": defaultdict(OutletEvents)}))
    assert stopped["stopped"]["clean"] is True, stopped
    values = read_all_values(plain, f"{name}_out", 2)
    assert len(values) == RECORDS and len(set(values)) == RECORDS
    print(f"{mechanism}: submit to clean stop {time.monotonic() - started:.1f}s")

    # The spec file the driver read holds none of the connection's secrets.
    for spec_file in (tmp_path / "drivers").glob("*.spec.json"):
        text = spec_file.read_text()
        for secret in secrets_of(stack):
            assert secret not in text, f"{secret[:6]}... in {spec_file.name}"


def refused(act: Callable[[], object]) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(AirflowFailException) as failed:
        act()
    return str(failed.value), time.monotonic() - started


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("wrong CA", "the broker's certificate is not trusted"),
        ("expired client certificate", "the broker refused the client certificate"),
        ("refused OIDC client", "refused client 'kafkaspark-client'"),
    ],
)
def test_bad_credentials_fail_at_once_naming_connection_and_mechanism(
    case: str, says: str, stack: SecureKafka, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_kafkaspark.sensors.bootstrap import KafkaBootstrapHealthSensor

    tls = stack.tls
    if case == "wrong CA":
        extra, mechanism = (
            {**extra_for(stack, "tls"), "ssl.ca.location": str(tls.other_ca_cert)},
            "SSL",
        )
    elif case == "expired client certificate":
        extra = {
            **extra_for(stack, "mtls"),
            "ssl.certificate.location": str(tls.expired_client_cert),
            "ssl.key.location": str(tls.expired_client_key),
        }
        extra.pop("ssl.key.password")
        mechanism = "SSL"
    else:
        extra = {**extra_for(stack, "oidc"), "sasl.oauthbearer.client.secret": "not-the-secret"}
        mechanism = "SASL_SSL/OAUTHBEARER"
    use_connection(monkeypatch, "kafka_bad", extra)
    sensor = KafkaBootstrapHealthSensor(
        task_id="probe", kafka_conn_id="kafka_bad", timeout_s=PROBE_S
    )
    message, took = refused(lambda: sensor.poke(cast(Context, {})))
    assert "Kafka connection 'kafka_bad'" in message and f"({mechanism})" in message, message
    assert says in message, message
    for secret in [*secrets_of(stack), "not-the-secret"]:
        assert secret not in message
    assert took < AT_ONCE_S, f"{case}: took {took:.1f}s (budget {PROBE_S:g}s)"
