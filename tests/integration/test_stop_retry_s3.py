"""A stop task retried after it already stopped the job and saved its savepoint (issue 27,
item 5): a real driver with its checkpoint and savepoints on the local S3 server, a
deferrable stop whose trigger fires and whose resumed part finishes, then the same task
again as Airflow's try 2. The retry returns the first try's savepoint with `stopped` filled
from the driver's report, and only that one savepoint exists; `kafkaspark job stop` on the
stopped job returns it too."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from airflow.sdk import Context
from airflow.sdk.exceptions import TaskDeferred

from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore
from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator
from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
from kafkaspark_devstack.drivers import driver_ref, read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import LocalS3Server
from tests.conftest import S3_BUCKET, s3_env
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.integration.runtime_util import committed_batches, wait_until

TOPIC = "stop_retry_s3_source"
JOB = "stop_retry_s3"


def _context(try_number: int) -> dict[str, Any]:
    return {
        "outlet_events": defaultdict(SimpleNamespace),
        "run_id": "manual__stop_retry",
        "ti": SimpleNamespace(try_number=try_number),
    }


def test_a_retried_stop_returns_the_first_tries_savepoint(
    kafka_cluster: LocalKafkaCluster,
    s3_server: LocalS3Server,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    bootstrap = kafka_cluster.bootstrap_servers
    monkeypatch.setenv(
        "AIRFLOW_CONN_KAFKA_RETRY",
        json.dumps({"conn_type": "kafka", "extra": {"bootstrap.servers": bootstrap}}),
    )
    monkeypatch.setenv("AIRFLOW_CONN_S3_RETRY", json.dumps(s3_server.aws_connection()))
    create_topic(bootstrap, TOPIC, 2)
    produce_numbered(bootstrap, TOPIC, 400)
    base = f"s3://{S3_BUCKET}/{tmp_path.name}"
    checkpoint, savepoints = f"{base}/checkpoint", f"{base}/savepoints"
    spec = {
        "job_name": JOB,
        "source": {
            "bootstrap_servers": "from-connection:9092",
            "subscribe": [TOPIC],
            "max_offsets_per_trigger": 100,
        },
        # State, so that the savepoint copies more than the offsets and commits logs.
        "sql": "SELECT partition, COUNT(*) AS n FROM source GROUP BY partition",
        "sink": {"kind": "console", "output_mode": "update"},
        "checkpoint_location": checkpoint,
        "trigger_interval": "1 second",
        "lease_ttl_s": 6,
    }
    handle = SubmitStreamingJobOperator(
        task_id="submit",
        job_spec=spec,
        kafka_conn_id="kafka_retry",
        aws_conn_id="s3_retry",
        workdir=str(tmp_path / "jobs"),
        max_restarts=0,
    ).execute(cast(Context, {}))
    driver = driver_ref(handle)
    with KafkaSparkHook(aws_conn_id="s3_retry").storage():
        wait_until(driver, "two committed batches", lambda: committed_batches(checkpoint) >= 1)

    def stop_task() -> StopStreamingJobOperator:
        return StopStreamingJobOperator(
            task_id="stop",
            checkpoint=checkpoint,
            job_name=JOB,
            savepoint_root=savepoints,
            aws_conn_id="s3_retry",
            deferrable=True,
            wait_in_task_s=0,  # the trigger's path
            poll_interval_s=0.5,
        )

    # Try 1: defers, the trigger sees the report, the resumed part returns.
    first_context = _context(1)
    with pytest.raises(TaskDeferred) as deferred:
        stop_task().execute(cast(Context, first_context))
    trigger = deferred.value.trigger

    async def first_event() -> dict[str, Any]:
        async for event in trigger.run():
            return dict(event.payload)
        raise AssertionError("no event")

    event = asyncio.run(first_event())
    assert event["state"] == "stopped" and event["clean"] is True, event
    resumed_at = time.monotonic()
    first = stop_task().execute_complete(cast(Context, first_context), event)
    resumed_s = time.monotonic() - resumed_at
    print(f"resumed part of the deferrable stop: {resumed_s:.2f} s (event to task end)")
    assert wait_exit(driver, 60) == 0, read_log(driver)
    assert first["stopped"] is not None and first["stopped"]["clean"] is True, first

    # Try 2 of the same task in the same run (Airflow marked try 1 up for retry).
    second_context = _context(2)
    second = stop_task().execute(cast(Context, second_context))
    assert second == first
    assert second_context["outlet_events"] == first_context["outlet_events"]
    with KafkaSparkHook(aws_conn_id="s3_retry").storage():
        listed = SavepointStore(savepoints).list(JOB)
    assert [m.savepoint_id for m in listed] == [first["savepoint_id"]]

    # The CLI's stop shares the savepoint step: the stopped job's savepoint, not a second.
    ref_file = tmp_path / "ref.json"
    ref_file.write_text(json.dumps(handle["job_ref"]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    kafkaspark = str(Path(sys.executable).parent / "kafkaspark")
    cli = subprocess.run(
        [kafkaspark, "job", "stop", str(ref_file), "--savepoint-root", savepoints, "--json"],
        capture_output=True,
        text=True,
        env={**env, **s3_env(s3_server)},
        timeout=180,
        check=False,
    )
    assert cli.returncode == 0, cli.stderr
    printed = json.loads(cli.stdout[cli.stdout.index("{") :])  # after the "stopping" line
    assert printed["savepoint_id"] == first["savepoint_id"], cli.stdout
    with KafkaSparkHook(aws_conn_id="s3_retry").storage():
        assert len(SavepointStore(savepoints).list(JOB)) == 1
    # The trigger took it: the resumed part only found it (what keeps that part short).
    assert event.get("savepoint_id") == first["savepoint_id"], event
