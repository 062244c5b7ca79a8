"""The health sensor and trigger against a real driver, the bootstrap sensor against the real
broker, and the reconcile operator on real Spark checkpoints. Connections come from
`AIRFLOW_CONN_*` environment variables, as Airflow reads them."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef
from airflow_provider_kafkaspark.core.control.folder import ControlFolder, request_stop
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator
from airflow_provider_kafkaspark.sensors.bootstrap import KafkaBootstrapHealthSensor
from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor
from airflow_provider_kafkaspark.triggers.health import StreamingHealthTrigger
from kafkaspark_devstack.drivers import kill_driver, read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.integration.runtime_util import committed_batches, has_lease, start, wait_until
from tests.integration.spark_checkpoints import MadeCheckpoint, run_stateless

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SECRET = "never-logged-sasl-secret"
TOPIC = "airflow_health"


def kafka_conn(monkeypatch: pytest.MonkeyPatch, name: str, bootstrap: str) -> str:
    """An official-provider `kafka` connection in Airflow's JSON env format. The extra carries a
    made-up secret that a PLAINTEXT client ignores, to check it never reaches XCom."""
    extra = {"bootstrap.servers": bootstrap, "sasl.password": SECRET}
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{name.upper()}", json.dumps({"conn_type": "kafka", "extra": extra})
    )
    return name


def context(ti: Any = None) -> Context:
    return cast(Context, {} if ti is None else {"ti": ti})


class FakeTI:
    """Only what the operators call on the task instance."""

    def __init__(self) -> None:
        self.xcom: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        json.dumps(value)  # what Airflow would store must be JSON
        self.xcom[key] = value


# -- a live driver, fed continuously -----------------------------------------------------------


@dataclass
class LiveDriver:
    handle: LocalJobRef
    checkpoint: str
    bootstrap: str
    started_ms: int


class Feeder(threading.Thread):
    """Produces a few records every 0.3 s, so the driver keeps planning batches."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(name="feeder", daemon=True)
        self.producer: Producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic = topic
        self.halt = threading.Event()
        self.sent = 0

    def run(self) -> None:
        while not self.halt.is_set():
            for _ in range(20):
                value = str(100_000 + self.sent).encode()
                self.producer.produce(self.topic, key=value, value=value)
                self.sent += 1
            self.producer.flush(10)
            self.halt.wait(0.3)
        # Dropped here: a producer left alive keeps reconnecting after the broker stops.
        del self.producer

    def stop(self) -> None:
        self.halt.set()
        self.join(30)


@pytest.fixture(scope="module")
def live_driver(
    kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveDriver]:
    base = tmp_path_factory.mktemp("airflow-health")
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, TOPIC, 2)
    produce_numbered(bootstrap, TOPIC, 400)
    checkpoint = str(base / "checkpoint")
    spec = {
        "job_name": "airflow_health",
        "source": {
            "bootstrap_servers": bootstrap,
            "subscribe": [TOPIC],
            "max_offsets_per_trigger": 200,
        },
        "sql": "SELECT partition, offset, CAST(value AS STRING) AS value FROM source",
        "sink": {"kind": "parquet", "path": str(base / "out")},
        "checkpoint_location": checkpoint,
        "trigger_interval": "1 second",
        "lease_ttl_s": 6,
    }
    started_ms = int(time.time() * 1000)
    handle = start(spec, base / "run")
    feeder = Feeder(bootstrap, TOPIC)
    try:
        wait_until(handle, "the first committed batch", lambda: committed_batches(checkpoint) >= 0)
        wait_until(handle, "the driver's lease", lambda: has_lease(checkpoint))
        feeder.start()
        yield LiveDriver(handle, checkpoint, bootstrap, started_ms)
    finally:
        if feeder.is_alive():
            feeder.stop()
        if pid_alive(handle.pid):
            kill_driver(handle)


def latest_committed(checkpoint: str) -> int:
    batch = CheckpointReader(checkpoint).position().latest_committed
    assert batch is not None
    return batch


def test_poke_mode_becomes_healthy_after_new_batches(
    live_driver: LiveDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = kafka_conn(monkeypatch, "kafka_live", live_driver.bootstrap)
    since = latest_committed(live_driver.checkpoint)
    sensor = StreamingHealthSensor(
        task_id="healthy",
        checkpoint=live_driver.checkpoint,
        kafka_conn_id=conn,
        since_batch=str(since),  # as Jinja renders the submit operator's XCom
        min_new_batches=3,
        window_s=8,
        poll_interval_s=1,
        timeout=240,
    )
    result = sensor.execute(context())  # BaseSensorOperator's own poke loop
    assert result["state"] == "healthy", result
    assert result["status"] == "OK"
    assert result["new_batches"] >= 3
    assert result["latest_committed"] >= since + 3
    assert latest_committed(live_driver.checkpoint) >= since + 3
    assert SECRET not in json.dumps(result)
    assert pid_alive(live_driver.handle.pid), read_log(live_driver.handle)


def test_trigger_run_yields_healthy(
    live_driver: LiveDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = kafka_conn(monkeypatch, "kafka_live", live_driver.bootstrap)
    since = latest_committed(live_driver.checkpoint)
    trigger = StreamingHealthTrigger(
        checkpoint=live_driver.checkpoint,
        kafka_conn_id=conn,
        since_batch=since,
        min_new_batches=2,
        window_s=8,
        poll_interval_s=1,
        timeout_s=240,
    )
    _, kwargs = trigger.serialize()
    assert SECRET not in json.dumps(kwargs) and live_driver.bootstrap not in json.dumps(kwargs)

    async def first_event() -> dict[str, Any]:
        async for event in trigger.run():
            return cast(dict[str, Any], event.payload)
        raise AssertionError("the trigger ended without an event")

    payload = asyncio.run(first_event())
    assert payload["state"] == "healthy", payload
    assert payload["new_batches"] >= 2
    assert payload["report"]["status"] == "OK"
    assert payload["report"]["figures"]["latest_committed"] >= since + 2
    assert SECRET not in json.dumps(payload)
    # What the sensor makes of it after the deferral.
    sensor = StreamingHealthSensor(task_id="resumed", checkpoint=live_driver.checkpoint)
    summary = sensor.execute_complete(context(), payload)
    assert summary["state"] == "healthy" and summary["status"] == "OK"


def test_stopped_driver_fails_a_new_sensor_fast(
    live_driver: LiveDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = kafka_conn(monkeypatch, "kafka_live", live_driver.bootstrap)
    since = latest_committed(live_driver.checkpoint)
    wait_until(
        live_driver.handle,
        "a batch after the sensor's since_batch",
        lambda: committed_batches(live_driver.checkpoint) > since,
    )
    request_stop(live_driver.checkpoint, requested_by="test", reason="airflow sensor test")
    assert wait_exit(live_driver.handle, 180) == 0, read_log(live_driver.handle)
    assert ControlFolder(live_driver.checkpoint).read_lease() is None
    assert ControlFolder(live_driver.checkpoint).read_stopped() is not None

    for name, since_batch, since_ms in (
        ("by_batch", str(since), None),  # the stopped report names a later batch
        ("by_time", "None", str(live_driver.started_ms)),  # it was written after the submit
    ):
        sensor = StreamingHealthSensor(
            task_id=f"after_stop_{name}",
            checkpoint=live_driver.checkpoint,
            kafka_conn_id=conn,
            since_batch=since_batch,
            since_ms=since_ms,
            lease_required=True,
            window_s=8,
            poll_interval_s=1,
            timeout=120,
        )
        began = time.monotonic()
        with pytest.raises(AirflowFailException) as failed:
            sensor.execute(context())
        assert time.monotonic() - began < 30, "should fail at the first poke"
        reason = str(failed.value)
        assert "driver gone" in reason and "stopped" in reason, reason
        assert "airflow sensor test" in reason, reason
        assert SECRET not in reason


# -- bootstrap sensor ---------------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_bootstrap_sensor_reports_the_dead_entry(
    kafka_cluster: LocalKafkaCluster,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    live = kafka_cluster.bootstrap_servers.split(",")[0]
    dead = f"127.0.0.1:{closed_port()}"
    conn = kafka_conn(monkeypatch, "kafka_mixed", f"{live},{dead}")

    strict = KafkaBootstrapHealthSensor(task_id="strict", kafka_conn_id=conn, timeout_s=5)
    waiting = strict.poke(context())
    assert not waiting.is_done and waiting.xcom_value is None
    logged = capsys.readouterr()
    output = logged.out + logged.err
    assert dead in output and "UNREACHABLE" in output, output
    assert SECRET not in output

    lenient = KafkaBootstrapHealthSensor(
        task_id="lenient", kafka_conn_id=conn, timeout_s=5, require_all=False
    )
    done = lenient.poke(context())
    assert done.is_done
    report = done.xcom_value
    assert report is not None and report["healthy"] is True
    assert report["dead"] == [dead]
    statuses = {s["server"]: s["status"] for s in report["servers"]}
    assert statuses == {live: "OK", dead: "UNREACHABLE"}
    assert SECRET not in json.dumps(report)


# -- reconcile operator -------------------------------------------------------------------------


def test_reconcile_clean_checkpoint_has_no_findings(
    made_checkpoints: dict[str, MadeCheckpoint],
    kafka_cluster: LocalKafkaCluster,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    made = made_checkpoints["stateless"]
    copy = tmp_path / "cp"
    shutil.copytree(made.path, copy)
    conn = kafka_conn(monkeypatch, "kafka_reconcile", kafka_cluster.bootstrap_servers)
    ti = FakeTI()
    op = KafkaPartitionReconcileOperator(
        task_id="reconcile", checkpoint=str(copy), kafka_conn_id=conn, subscribe=[made.topic]
    )
    result = op.execute(context(ti))
    assert result["findings"] == [] and result["max_severity"] is None
    assert result["lag"]["partitions"] == 3
    assert ti.xcom["lag"]["total_records"] == result["lag"]["total_records"] == 0
    assert set(ti.xcom["lag"]) >= {"total_records", "max_seconds"}
    assert len(json.dumps(result)) < 4_000
    assert SECRET not in json.dumps(result)


def test_reconcile_fails_on_a_deleted_topic_and_reports_when_asked(
    spark: SparkSession,
    kafka_cluster: LocalKafkaCluster,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    kept, doomed = "airflow_reconcile_kept", "airflow_reconcile_doomed"
    create_topic(bootstrap, kept, 2)
    create_topic(bootstrap, doomed, 1)
    produce_numbered(bootstrap, kept, 200)
    produce_numbered(bootstrap, doomed, 30)
    checkpoint = tmp_path / "cp"
    run_stateless(spark, bootstrap, f"{kept},{doomed}", checkpoint, "airflow_reconcile")
    assert set(CheckpointReader(str(checkpoint)).position().committed_offsets) == {kept, doomed}

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([doomed])[doomed].result()
    facade = KafkaFacade({"bootstrap.servers": bootstrap}, timeout_s=10)
    wait_until(None, "the topic deletion", lambda: doomed not in facade.topic_partitions([doomed]))
    conn = kafka_conn(monkeypatch, "kafka_reconcile", bootstrap)

    ti = FakeTI()
    gate = KafkaPartitionReconcileOperator(
        task_id="gate", checkpoint=str(checkpoint), kafka_conn_id=conn, subscribe=[kept]
    )
    with pytest.raises(AirflowFailException) as failed:
        gate.execute(context(ti))
    message = str(failed.value)
    assert "TOPIC_MISSING" in message and doomed in message and "CRITICAL" in message
    assert ti.xcom["lag"]["total_records"] == 0  # pushed before failing

    skip = KafkaPartitionReconcileOperator(
        task_id="skip",
        checkpoint=str(checkpoint),
        kafka_conn_id=conn,
        fail_on=None,
        soft_fail_on="WARNING",
    )
    with pytest.raises(AirflowSkipException, match="TOPIC_MISSING"):
        skip.execute(context(FakeTI()))

    report_ti = FakeTI()
    report = KafkaPartitionReconcileOperator(
        task_id="report", checkpoint=str(checkpoint), kafka_conn_id=conn, report_only=True
    )
    plan = report.execute(context(report_ti))
    assert plan["max_severity"] == "CRITICAL"
    missing = [f for f in plan["findings"] if f["kind"] == "TOPIC_MISSING"]
    assert [(f["topic"], f["severity"]) for f in missing] == [(doomed, "CRITICAL")]
    assert "lag" in report_ti.xcom
    assert json.loads(json.dumps(plan)) == plan
