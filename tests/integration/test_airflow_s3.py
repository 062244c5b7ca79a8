"""The Airflow layer with the checkpoint and savepoints on a real S3 server, credentials from
an official `aws` connection only: no AWS variable is set in this process, so every S3 call
of the operators, the sensor, the triggers and the driver works through the connection or
not at all. Bad connections fail with typed errors naming the URL, without the secret."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException, TaskDeferred

from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore
from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator
from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator
from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor
from kafkaspark_devstack.drivers import driver_ref
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import REGION, LocalS3Server
from tests.conftest import S3_BUCKET, s3_env
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.integration.runtime_util import committed_batches, wait_until
from tests.integration.spark_checkpoints import MadeCheckpoint

TOPIC = "airflow_s3_source"


def aws_conn(monkeypatch: pytest.MonkeyPatch, name: str, server: LocalS3Server, secret: str) -> str:
    value = {**server.aws_connection(), "password": secret}
    monkeypatch.setenv(f"AIRFLOW_CONN_{name.upper()}", json.dumps(value))
    return name


@pytest.fixture
def no_aws_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)


@pytest.mark.extended(covered_by="tests/cluster: test_streaming_on_yarn.py, test_airflow_on_bed.py")
def test_submit_health_stop_and_reconcile_through_an_aws_connection(
    kafka_cluster: LocalKafkaCluster,
    s3_server: LocalS3Server,
    no_aws_variables: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    monkeypatch.setenv(
        "AIRFLOW_CONN_KAFKA_S3",
        json.dumps({"conn_type": "kafka", "extra": {"bootstrap.servers": bootstrap}}),
    )
    store = aws_conn(monkeypatch, "s3_store", s3_server, s3_server.secret_key)
    create_topic(bootstrap, TOPIC, 2)
    produce_numbered(bootstrap, TOPIC, 600)
    base = f"s3://{S3_BUCKET}/{tmp_path.name}"
    checkpoint, savepoints = f"{base}/checkpoint", f"{base}/savepoints"
    spec = {
        "job_name": "airflow_s3",
        "source": {
            "bootstrap_servers": "from-connection:9092",
            "subscribe": [TOPIC],
            "max_offsets_per_trigger": 200,
        },
        "sql": "SELECT partition, offset, CAST(value AS STRING) AS value FROM source",
        "sink": {"kind": "parquet", "path": str(tmp_path / "out")},
        "checkpoint_location": checkpoint,
        "trigger_interval": "1 second",
        "lease_ttl_s": 6,
    }

    handle = SubmitStreamingJobOperator(
        task_id="submit",
        job_spec=spec,
        kafka_conn_id="kafka_s3",
        aws_conn_id=store,
        workdir=str(tmp_path / "jobs"),
        max_restarts=0,
    ).execute(cast(Context, {}))
    driver = driver_ref(handle)
    with KafkaSparkHook(aws_conn_id=store).storage():
        wait_until(driver, "a committed batch on S3", lambda: committed_batches(checkpoint) >= 0)

    sensor = StreamingHealthSensor(
        task_id="health",
        checkpoint=checkpoint,
        kafka_conn_id="kafka_s3",
        aws_conn_id=store,
        since_batch=handle["since_batch"],
        min_new_batches=1,
        poll_interval_s=1,
        timeout=240,
        deferrable=False,
    )
    healthy = sensor.execute(cast(Context, {}))
    assert healthy["state"] == "healthy", healthy

    stop = StopStreamingJobOperator(
        task_id="stop",
        checkpoint=checkpoint,
        job_name="airflow_s3",
        savepoint_root=savepoints,
        aws_conn_id=store,
        deferrable=True,
        wait_in_task_s=0,  # the trigger's path
        poll_interval_s=0.5,
    )
    context: dict[str, Any] = {"outlet_events": defaultdict(SimpleNamespace)}
    with pytest.raises(TaskDeferred) as deferred:
        stop.execute(cast(Context, context))
    trigger = deferred.value.trigger
    assert trigger.serialize()[1]["aws_conn_id"] == store

    async def first_event() -> dict[str, Any]:
        async for event in trigger.run():
            return dict(event.payload)
        raise AssertionError("no event")

    event = asyncio.run(first_event())
    assert event["state"] == "stopped" and event["clean"] is True, event
    result = stop.execute_complete(cast(Context, context), event)
    with KafkaSparkHook(aws_conn_id=store).storage():
        manifest = SavepointStore(savepoints).show(result["savepoint_id"])
        assert SavepointStore(savepoints).verify(manifest.savepoint_id).ok
    assert manifest.last_committed_batch == event["last_committed_batch"]

    plan = KafkaPartitionReconcileOperator(
        task_id="reconcile", checkpoint=checkpoint, kafka_conn_id="kafka_s3", aws_conn_id=store
    ).execute(cast(Context, {"ti": SimpleNamespace(xcom_push=lambda **_: None)}))
    assert not [f for f in plan["findings"] if f["severity"] == "CRITICAL"], plan

    # The secret is nowhere the task writes: results, the driver's log, its spec file.
    secret = s3_server.secret_key
    assert secret not in json.dumps([handle, healthy, result, plan], default=str)
    assert secret not in Path(driver.log_file).read_text(errors="replace")
    assert secret not in Path(driver.spec_file).read_text()


def test_a_wrong_secret_fails_at_once_naming_the_url(
    s3_server: LocalS3Server,
    no_aws_variables: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    wrong = "wrong-secret-SENTINEL"
    store = aws_conn(monkeypatch, "s3_wrong", s3_server, wrong)
    checkpoint = f"s3://{S3_BUCKET}/{tmp_path.name}/checkpoint"
    stop = StopStreamingJobOperator(
        task_id="stop",
        checkpoint=checkpoint,
        job_name="j",
        savepoint_root=f"s3://{S3_BUCKET}/{tmp_path.name}/savepoints",
        aws_conn_id=store,
    )
    with pytest.raises(AirflowFailException) as failed:  # not retried
        stop.execute(cast(Context, {}))
    message = str(failed.value)
    assert checkpoint in message and "refused access" in message
    assert wrong not in message


def test_an_unreachable_endpoint_is_retried_and_named(
    no_aws_variables: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from kafkaspark_devstack.ports import free_port

    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    value = {
        "conn_type": "aws",
        "login": "AKID",
        "password": "SENTINEL-secret",
        "extra": {"endpoint_url": endpoint, "region_name": REGION},
    }
    monkeypatch.setenv("AIRFLOW_CONN_S3_NOWHERE", json.dumps(value))
    checkpoint = f"s3://{S3_BUCKET}/{tmp_path.name}/checkpoint"
    reconcile = KafkaPartitionReconcileOperator(
        task_id="reconcile", checkpoint=checkpoint, aws_conn_id="s3_nowhere"
    )
    with pytest.raises(AirflowException) as failed:
        reconcile.execute(cast(Context, {}))
    assert not isinstance(failed.value, AirflowFailException)  # a retry may find it up
    assert checkpoint in str(failed.value) and "did not answer" in str(failed.value)
    assert "SENTINEL" not in str(failed.value)


def test_the_connection_applies_only_inside_its_scope(
    s3_server: LocalS3Server, no_aws_variables: None, tmp_path: Path
) -> None:
    """Two scopes with different credentials in one process (as two triggers of one
    triggerer): each sees only its own."""
    from airflow_provider_kafkaspark.core.storage.location import open_location

    url = f"s3://{S3_BUCKET}/{tmp_path.name}/scoped"
    good = s3_server.storage_options()
    bad = {**good, "secret": "not-it"}
    with s3_options_scope(good):
        open_location(url).write_atomic("hello", "f")
        with s3_options_scope(bad):
            with pytest.raises(Exception, match="refused access"):
                open_location(url).read_text("f")
        assert open_location(url).read_text("f") == "hello"


# -- the CLI reads the standard AWS variables ---------------------------------------------------


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    kafkaspark = str(Path(sys.executable).parent / "kafkaspark")
    return subprocess.run(
        [kafkaspark, *args], capture_output=True, text=True, env=env, timeout=180, check=False
    )


def test_the_cli_on_s3_exit_codes_and_messages(
    s3_server: LocalS3Server, made_checkpoints: dict[str, MadeCheckpoint], tmp_path: Path
) -> None:
    """Good credentials: a savepoint of a real checkpoint to S3 and back in the listing (exit
    0); a wrong secret: exit 2 naming the URL; no server: exit 1 naming the URL. The secret
    is in no output."""
    base = f"s3://{S3_BUCKET}/{tmp_path.name}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    good = {**env, **s3_env(s3_server)}
    made = made_checkpoints["stateless"]
    created = _cli(
        good, "savepoint", "--root", f"{base}/sp", "create", str(made.path), "--job", "cli"
    )
    assert created.returncode == 0, created.stderr
    listed = _cli(good, "savepoint", "list", "--root", f"{base}/sp", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["job_name"] == "cli"

    wrong = {**good, "AWS_SECRET_ACCESS_KEY": "wrong-SENTINEL"}
    refused = _cli(wrong, "savepoint", "list", "--root", f"{base}/sp")
    assert refused.returncode == 2, refused
    assert f"{base}/sp" in refused.stderr and "refused access" in refused.stderr

    from kafkaspark_devstack.ports import free_port

    nowhere = {**good, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}
    unanswered = _cli(nowhere, "checkpoint", "inspect", f"{base}/cp")
    assert unanswered.returncode == 1, unanswered
    assert f"{base}/cp" in unanswered.stderr and "did not answer" in unanswered.stderr
    for proc in (created, listed, refused, unanswered):
        assert s3_server.secret_key not in proc.stdout + proc.stderr
        assert "SENTINEL" not in proc.stdout + proc.stderr
