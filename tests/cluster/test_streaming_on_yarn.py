"""The streaming job's lifecycle with its driver in a YARN application master, through the
Airflow operators and a `spark` connection (master yarn, deploy-mode cluster): submit, YARN
restarting a killed driver, and a stop with a savepoint; state on S3, the provider's code
shipped with each submit, and the sink's output read `read_committed` for duplicates and
missing counts.

The figures (submit to first committed batch, YARN's restart of a killed driver, the stop)
are printed and written to `yarn_figures.json` in the test's folder."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any, cast

import pytest
from airflow.sdk import Context

from airflow_provider_kafkaspark.backends import driver_status
from airflow_provider_kafkaspark.core.cluster import yarn_rest
from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef, job_ref_from_dict
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
from airflow_provider_kafkaspark.examples.access_events import (
    AccessEvent,
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.examples.ip_count import (
    job_spec_dict,
)
from airflow_provider_kafkaspark.operators.submit import (
    SubmitStreamingJobOperator,
)
from airflow_provider_kafkaspark.spark.local_session import spark_jars_option
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import LocalS3Server
from kafkaspark_devstack.yarn import (
    LocalYarnCluster,
    application_master_pids,
    node_python_has_package,
)
from tests.cluster.yarn_apps import use_yarn_worker, wait
from tests.conftest import S3_BUCKET
from tests.integration.cli_util import cli
from tests.integration.kafka_util import create_topic
from tests.lifecycle_story import (
    check_output,
    committed,
    lease_owner,
    read_to_end,
    stop_with_savepoint,
)

SOURCE, SINK = "yarn_source", "yarn_sink"


@pytest.fixture
def connections(
    monkeypatch: pytest.MonkeyPatch,
    yarn: LocalYarnCluster,
    kafka_cluster: LocalKafkaCluster,
    s3_server: LocalS3Server,
) -> None:
    """The three official connection types, and a worker environment that has spark-submit
    and the cluster's client configuration, but no AWS variables."""
    extra = {"deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": yarn.web_url}
    conns: dict[str, dict[str, Any]] = {
        "spark_yarn": {"conn_type": "spark", "host": "yarn", "extra": extra},
        "kafka_yarn": {
            "conn_type": "kafka",
            "extra": {"bootstrap.servers": kafka_cluster.bootstrap_servers},
        },
        "s3_yarn": s3_server.aws_connection(),
    }
    use_yarn_worker(monkeypatch, yarn, conns)


def test_submit_restart_and_stop_on_yarn(
    connections: None,
    yarn: LocalYarnCluster,
    kafka_cluster: LocalKafkaCluster,
    s3_server: LocalS3Server,
    tmp_path: Path,
) -> None:
    # The containers' Python lacks the provider: it can only come from what a submit ships.
    assert not node_python_has_package(yarn.node_python)
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, SOURCE, 3)
    create_topic(bootstrap, SINK, 3)
    events = list(generate_events(6_000, seed=47))
    produce_events(bootstrap, SOURCE, events)
    base = f"s3://{S3_BUCKET}/{tmp_path.name}"
    checkpoint, savepoints = f"{base}/checkpoint", f"{base}/savepoints"
    spec = job_spec_dict(
        bootstrap_servers="from-connection:9092",
        checkpoint=checkpoint,
        job_name="yarn_ip_count",
        source_topic=SOURCE,
        sink_topic=SINK,
        trigger_interval="2 seconds",
        max_offsets_per_trigger=600,
    )
    spec["spark_conf"] = {"spark.sql.shuffle.partitions": "2"}
    spec["lease_ttl_s"] = 20
    common: dict[str, Any] = {
        "job_spec": spec,
        "kafka_conn_id": "kafka_yarn",
        "spark_conn_id": "spark_yarn",
        "aws_conn_id": "s3_yarn",
        "jars": spark_jars_option(s3a=True),
        "workdir": str(tmp_path / "jobs"),
        "max_restarts": 3,
    }
    figures: dict[str, float] = {}
    kafka = KafkaFacade({"bootstrap.servers": bootstrap})
    s3 = s3_server.storage_options()

    t0 = time.monotonic()
    handle = SubmitStreamingJobOperator(task_id="submit", **common).execute(cast(Context, {}))
    figures["spark_submit_s"] = time.monotonic() - t0
    ref = job_ref_from_dict(handle["job_ref"])
    assert isinstance(ref, YarnJobRef) and handle["mode"] == "yarn"
    assert ref.resource_manager == yarn.web_url and "pid" not in handle
    with s3_options_scope(s3):
        wait("a first committed batch", lambda: committed(checkpoint), lambda n: n >= 0, 300)
        figures["submit_to_first_commit_s"] = time.monotonic() - t0
        first_owner = lease_owner(checkpoint)

        # The driver dies with its container; YARN, not this host, starts it again.
        (am_pid,) = application_master_pids(ref.application_id)
        before = committed(checkpoint)
        killed_at = time.monotonic()
        os.kill(am_pid, signal.SIGKILL)
        wait("a second attempt", lambda: len(yarn_rest.attempts(ref)), lambda n: n >= 2, 240)
        wait(
            "a batch of the restarted driver",
            lambda: committed(checkpoint),
            lambda n: n > before,
            300,
        )
        figures["yarn_restart_to_next_commit_s"] = time.monotonic() - killed_at
        assert lease_owner(checkpoint) not in (None, first_owner)
        assert driver_status(ref).alive is True
        # What a person at a terminal on any host sees of it, from the reference alone.
        ref_text = json.dumps(handle["job_ref"])
        # Without credentials the lease on S3 cannot be read: a typed error naming the URL.
        refused = cli("job", "status", ref_text)
        assert refused.returncode == 2 and f"{checkpoint}" in refused.stderr, refused.stderr
        assert "no credentials" in refused.stderr and "Traceback" not in refused.stderr
        person = {**os.environ, **s3_server.aws_environment()}
        status = cli("job", "status", ref_text, "--json", env=person)
        assert status.returncode == 0, status.stderr
        shown = json.loads(status.stdout)
        assert (shown["state"], shown["attempts"], shown["alive"]) == ("RUNNING", 2, True)

        flush_ms = max(e.event_time_ms for e in events) + 60_000
        produce_events(bootstrap, SOURCE, [AccessEvent("255.255.255.255", flush_ms, "/", 200)])
        wait(
            "the source read to its end",
            lambda: read_to_end(checkpoint, kafka, [SOURCE]),
            bool,
            300,
        )

    # The stop with a savepoint (a restore of it as a new YARN application is the restart
    # window of tests/cluster/test_airflow_on_bed.py).
    stopping = time.monotonic()
    stopped = stop_with_savepoint("stop", handle, savepoints, "s3_yarn")
    assert stopped["stopped"]["clean"] is True and stopped["savepoint_id"], stopped
    figures["stop_and_savepoint_s"] = time.monotonic() - stopping
    final = wait(
        "the application's end",
        lambda: yarn_rest.application(ref)["state"],
        lambda s: s not in yarn_rest.ACTIVE_STATES,
        120,
    )
    assert final == "FINISHED" and yarn_rest.application(ref)["finalStatus"] == "SUCCEEDED"

    check_output(bootstrap, SINK, 3, events, flush_ms, figures, tmp_path / "yarn_figures.json")
