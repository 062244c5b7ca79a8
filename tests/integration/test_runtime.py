"""The Spark runtime with real drivers: graceful stop, SIGTERM, lease, lag group, new
partitions. The exactly-once sink under crashes is in test_exactly_once.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka.admin import AdminClient, NewPartitions

import airflow_provider_kafkaspark
from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from airflow_provider_kafkaspark.core.control.folder import ControlFolder, request_stop
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.spark.local_session import spark_jars_option
from kafkaspark_devstack.drivers import read_log, signal_driver, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, describe_group, produce_numbered
from tests.integration.runtime_util import committed_batches, has_lease, start, wait_until


def stateless_spec(bootstrap: str, topic: str, tmp_path: Path, name: str) -> dict[str, object]:
    return {
        "job_name": name,
        "source": {
            "bootstrap_servers": bootstrap,
            "subscribe": [topic],
            "max_offsets_per_trigger": 500,
        },
        "sql": "SELECT partition, offset, CAST(value AS STRING) AS value FROM source",
        "sink": {"kind": "parquet", "path": str(tmp_path / "out")},
        "checkpoint_location": str(tmp_path / "checkpoint"),
        "trigger_interval": "1 second",
        "lease_ttl_s": 6,
    }


def committed_values(out: Path) -> list[int]:
    """The values in the parquet files the file sink's own log committed: an interrupted
    attempt may have left a partial file behind, which Spark's readers skip too. A set of
    files: from batch 9 on, the log compacts earlier batches' entries into `9.compact`, so a
    file can be named twice."""
    files = {
        json.loads(line)["path"]
        for log_file in sorted((out / "_spark_metadata").iterdir())
        if not log_file.name.startswith(".")
        for line in log_file.read_text().splitlines()[1:]
    }
    return [
        int(row["value"])
        for path in files
        for row in pq.read_table(path.removeprefix("file://")).to_pylist()
    ]


def consumer_groups_tool(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """CURRENT-OFFSET per partition, as Kafka's own kafka-consumer-groups tool shows it."""
    out = describe_group(bootstrap, group)
    offsets = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 4 and cols[0] == group and re.fullmatch(r"\d+", cols[3]):
            offsets[(cols[1], int(cols[2]))] = int(cols[3])
    return offsets


def test_graceful_stop_lag_group_and_second_driver(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = "runtime_graceful"
    create_topic(bootstrap, topic, 3)
    produce_numbered(bootstrap, topic, 3000)
    spec = stateless_spec(bootstrap, topic, tmp_path, "graceful")
    checkpoint = str(tmp_path / "checkpoint")
    driver = start(spec, tmp_path / "run")
    wait_until(driver, "3 committed batches", lambda: committed_batches(checkpoint) >= 2)

    # A second driver on the same checkpoint is refused while the first one runs.
    second = start(spec, tmp_path / "run2")
    assert wait_exit(second, 120) == 3, read_log(second)
    assert "held by" in read_log(second)
    assert pid_alive(driver.pid)

    request_stop(checkpoint, requested_by="test", reason="graceful stop test")
    assert wait_exit(driver, 180) == 0, read_log(driver)
    stopped = ControlFolder(checkpoint).read_stopped()
    position = CheckpointReader(checkpoint).position()
    assert stopped is not None and stopped.clean
    assert stopped.reason == "stop request by test: graceful stop test"
    assert stopped.last_planned_batch == stopped.last_committed_batch == position.latest_committed
    expected = {
        t: {str(p): o for p, o in ps.items()} for t, ps in position.committed_offsets.items()
    }
    assert stopped.offsets == expected
    assert ControlFolder(checkpoint).read_lease() is None  # released
    assert ControlFolder(checkpoint).read_stop_request() is None  # consumed

    progress = ControlFolder(checkpoint).read_progress()
    assert progress is not None and progress.last_batch is not None
    assert progress.last_batch.batch_id <= position.latest_committed  # type: ignore[operator]

    # Lag visibility: the group's committed offsets are the checkpoint's, seen both by the
    # admin API and by Kafka's own tool.
    group = "kafkaspark.graceful"
    admin_view = KafkaFacade({"bootstrap.servers": bootstrap}).group_offsets(group)
    assert admin_view == position.committed_offsets
    tool_view = consumer_groups_tool(bootstrap, group)
    assert tool_view == {(topic, p): o for p, o in position.committed_offsets[topic].items()}


def test_sigterm_drains_and_new_partitions_are_read_from_their_first_record(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = "runtime_new_partition"
    create_topic(bootstrap, topic, 2)
    produce_numbered(bootstrap, topic, 1000)
    spec = stateless_spec(bootstrap, topic, tmp_path, "newpart")
    checkpoint = str(tmp_path / "checkpoint")
    driver = start(spec, tmp_path / "run")
    wait_until(driver, "the first batches", lambda: committed_batches(checkpoint) >= 1)
    assert has_lease(checkpoint)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result()
    acked = produce_numbered(bootstrap, topic, 900, start=1000)
    assert acked[2] > 0, "the new partition should get records"

    def read_new_partition() -> bool:
        position = CheckpointReader(checkpoint).position()
        return position.committed_offsets.get(topic, {}).get(2) == acked[2]

    wait_until(driver, "the new partition to be read", read_new_partition)
    signal_driver(driver)
    assert wait_exit(driver, 180) == 0, read_log(driver)
    stopped = ControlFolder(checkpoint).read_stopped()
    assert stopped is not None and stopped.clean and stopped.reason == "SIGTERM"

    table = pq.read_table(str(tmp_path / "out")).to_pylist()
    values = [int(r["value"]) for r in table]
    assert sorted(values) == list(range(1900)), "each record exactly once"
    new_partition = sorted(r["offset"] for r in table if r["partition"] == 2)
    assert new_partition == list(range(acked[2])), "new partition read from its first record"


def test_spark_submit_runs_the_runner_file(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = "runtime_spark_submit"
    create_topic(bootstrap, topic, 2)
    produce_numbered(bootstrap, topic, 200)
    checkpoint = tmp_path / "checkpoint"
    spec = {
        "job_name": "submitted",
        "source": {"bootstrap_servers": bootstrap, "subscribe": [topic]},
        "sink": {"kind": "console"},
        "checkpoint_location": str(checkpoint),
        "trigger_interval": "availableNow",
        "lag_group": "",
    }
    (tmp_path / "job.json").write_text(json.dumps(spec))
    venv_bin = Path(sys.executable).parent
    runner = Path(airflow_provider_kafkaspark.__file__).parent / "spark" / "runner.py"
    proc = subprocess.run(
        [
            str(venv_bin / "spark-submit"),
            "--master",
            "local[2]",
            "--jars",
            spark_jars_option(),
            str(runner),
            "--spec",
            str(tmp_path / "job.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}"},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    stopped = ControlFolder(str(checkpoint)).read_stopped()
    assert stopped is not None and stopped.clean and stopped.reason == "query finished"
    assert sum(stopped.offsets[topic].values()) == 200


@pytest.mark.airflow
def test_deferrable_stop_operator_on_a_real_driver(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    import asyncio
    from collections import defaultdict
    from types import SimpleNamespace

    from airflow.sdk.exceptions import TaskDeferred

    from airflow_provider_kafkaspark.core.cluster.job_ref import job_ref_to_dict
    from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore
    from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator

    bootstrap = kafka_cluster.bootstrap_servers
    topic = "runtime_deferrable_stop"
    create_topic(bootstrap, topic, 2)
    produce_numbered(bootstrap, topic, 1000)
    spec = stateless_spec(bootstrap, topic, tmp_path, "defer_stop")
    checkpoint = str(tmp_path / "checkpoint")
    driver = start(spec, tmp_path / "run")
    wait_until(driver, "2 committed batches", lambda: committed_batches(checkpoint) >= 1)

    op = StopStreamingJobOperator(
        task_id="stop",
        checkpoint=checkpoint,
        job_name="defer_stop",
        savepoint_root=str(tmp_path / "sp"),
        handle={"job_ref": job_ref_to_dict(driver)},
        deferrable=True,
        wait_in_task_s=0,  # the trigger's path
        poll_interval_s=0.5,
    )
    context: dict[str, Any] = {"outlet_events": defaultdict(SimpleNamespace)}
    try:
        op.execute(context)  # type: ignore[arg-type]
        raise AssertionError("the operator should have deferred")
    except TaskDeferred as deferred:
        trigger = deferred.trigger

    async def first_event() -> dict[str, object]:
        async for event in trigger.run():
            return dict(event.payload)
        raise AssertionError("no event")

    event = asyncio.run(first_event())
    assert event["state"] == "stopped" and event["clean"] is True
    result = op.execute_complete(context, event)  # type: ignore[arg-type]
    assert wait_exit(driver, 60) == 0
    manifest = SavepointStore(str(tmp_path / "sp")).show(result["savepoint_id"])
    assert manifest.last_committed_batch == event["last_committed_batch"]
    assert manifest.pending_batch is None
    outlet = next(iter(context["outlet_events"].values()))
    assert outlet.extra["savepoint_id"] == result["savepoint_id"]


def test_stop_that_cannot_drain_says_so_and_the_interrupted_batch_reruns(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = "runtime_no_drain"
    create_topic(bootstrap, topic, 3)
    produce_numbered(bootstrap, topic, 600)
    spec = stateless_spec(bootstrap, topic, tmp_path, "nodrain")
    slow = dict(spec)
    # One row of batch 0 takes 60 s (a JVM sleep through Spark SQL's reflect): the batch is
    # in flight far longer than the 1 s the driver may wait for it.
    slow["sql"] = (
        "SELECT partition, offset, CAST(value AS STRING) AS value, "
        "reflect('java.lang.Thread', 'sleep', CAST(IF(offset = 50, 60000, 0) AS BIGINT)) AS s "
        "FROM source"
    )
    checkpoint = str(tmp_path / "checkpoint")
    driver = start(slow, tmp_path / "run")
    offsets_0 = Path(checkpoint) / "offsets" / "0"
    wait_until(driver, "batch 0 planned", offsets_0.exists)
    # The stop request's drain bound is the one the driver honours.
    request_stop(checkpoint, requested_by="test", reason="no time to drain", drain_timeout_s=1)
    assert wait_exit(driver, 120) == 2, read_log(driver)
    stopped = ControlFolder(checkpoint).read_stopped()
    assert stopped is not None and not stopped.clean
    assert stopped.last_planned_batch == 0 and stopped.last_committed_batch is None
    assert "could not drain within 1s" in stopped.message
    assert not (Path(checkpoint) / "commits" / "0").exists()

    # The next driver re-runs the interrupted batch; the file sink's own log keeps it once.
    driver = start(spec, tmp_path / "run2")
    wait_until(driver, "every record written", lambda: committed_batches(checkpoint) >= 1)
    request_stop(checkpoint, requested_by="test", reason="done")
    assert wait_exit(driver, 180) == 0, read_log(driver)
    assert sorted(committed_values(tmp_path / "out")) == list(range(600))


def test_a_job_that_is_behind_stops_at_the_batch_boundary_when_asked(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = "runtime_behind"
    create_topic(bootstrap, topic, 1)
    produce_numbered(bootstrap, topic, 200)
    spec = stateless_spec(bootstrap, topic, tmp_path, "behind")
    spec["source"] = {**spec["source"], "max_offsets_per_trigger": 20}  # type: ignore[dict-item]
    # One row of every batch of 20 sleeps 2 s, twice the 1 s trigger: Spark starts each
    # batch as soon as the one before it ends, so the job is never idle until it has read
    # everything. A stop that waited for an idle moment waited through all of it.
    spec["sql"] = (
        "SELECT partition, offset, CAST(value AS STRING) AS value, "
        "reflect('java.lang.Thread', 'sleep', CAST(IF(offset % 20 = 5, 2000, 0) AS BIGINT)) AS s "
        "FROM source"
    )
    checkpoint = str(tmp_path / "checkpoint")
    driver = start(spec, tmp_path / "run")
    wait_until(driver, "2 committed batches", lambda: committed_batches(checkpoint) >= 1)
    at_request = committed_batches(checkpoint)
    request_stop(
        checkpoint,
        requested_by="test",
        reason="behind",
        drain_timeout_s=60,
        at_batch_boundary=True,
    )
    assert wait_exit(driver, 120) == 0, read_log(driver)
    stopped = ControlFolder(checkpoint).read_stopped()
    assert stopped is not None and stopped.exit_code == 0, stopped
    assert stopped.last_committed_batch is not None
    # Only the batch in flight at the request ran to its end: 10 batches were left to read.
    assert stopped.last_committed_batch <= at_request + 1, (at_request, stopped)
    assert stopped.last_committed_batch < 9
    # A batch Spark planned as the one in flight ended is cut short and re-run: the file
    # sink writes it once, so the stop is clean.
    assert stopped.clean, stopped
    if stopped.last_planned_batch != stopped.last_committed_batch:
        assert "re-runs on restart" in stopped.message

    rest = {**spec, "trigger_interval": "availableNow"}
    driver = start(rest, tmp_path / "run2")
    assert wait_exit(driver, 180) == 0, read_log(driver)
    assert sorted(committed_values(tmp_path / "out")) == list(range(200))
