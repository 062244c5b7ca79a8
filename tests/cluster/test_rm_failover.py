"""ResourceManager HA on the local YARN (`LocalYarnCluster(ha=True)`: rm1 and rm2, the
embedded elector, ZKRMStateStore): the example streaming job, submitted through the operator
and a `spark` connection naming both RMs, outlives a crash of the active RM. Status, as any
host's task sees it from the reference saved before the crash, comes back once the standby
takes over, the application keeps its attempt and its driver (work-preserving recovery), a
forced kill goes through a standby's redirect to the new active RM, and with no RM left a
status fails at once with a typed error that names both addresses.

The figures (failover, how long status was unavailable) are printed and written to
`rm_failover_figures.json` in the test's folder. Run with `make e2e-cluster`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from airflow.sdk import Context

from airflow_provider_kafkaspark.backends.yarn import YarnBackend
from airflow_provider_kafkaspark.core.cluster import yarn_rest
from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef, job_ref_from_dict
from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
from airflow_provider_kafkaspark.errors import (
    ClusterUnavailableError,
    NoActiveResourceManagerError,
)
from airflow_provider_kafkaspark.examples.access_events import generate_events, produce_events
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
from airflow_provider_kafkaspark.spark.local_session import spark_jars_option
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import LocalS3Server
from kafkaspark_devstack.yarn import LocalYarnCluster, application_master_pids
from tests.cluster.yarn_apps import use_yarn_worker, wait
from tests.conftest import S3_BUCKET
from tests.integration.kafka_util import create_topic
from tests.lifecycle_story import committed, lease_owner

SOURCE, SINK = "ha_source", "ha_sink"
POLL_S = 0.25


@pytest.fixture(scope="module")
def ha_yarn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalYarnCluster]:
    cluster = LocalYarnCluster(tmp_path_factory.mktemp("yarn-ha"), ha=True).start()
    try:
        yield cluster
    finally:
        cluster.stop(timeout=10)  # as tests/cluster/conftest.py's


@pytest.fixture
def connections(
    monkeypatch: pytest.MonkeyPatch,
    ha_yarn: LocalYarnCluster,
    kafka_cluster: LocalKafkaCluster,
    s3_server: LocalS3Server,
) -> None:
    """As in test_streaming_on_yarn, with a `spark` connection that names both RMs."""
    conns: dict[str, dict[str, Any]] = {
        "spark_ha": {
            "conn_type": "spark",
            "host": "yarn",
            "extra": ha_yarn.spark_connection_extra(),
        },
        "kafka_ha": {
            "conn_type": "kafka",
            "extra": {"bootstrap.servers": kafka_cluster.bootstrap_servers},
        },
        "s3_ha": s3_server.aws_connection(),
    }
    use_yarn_worker(monkeypatch, ha_yarn, conns)
    # Each test starts as a task on another host would: no address remembered as active.
    yarn_rest._LAST_ACTIVE.clear()


def test_the_job_outlives_a_crash_of_the_active_resource_manager(
    connections: None,
    ha_yarn: LocalYarnCluster,
    kafka_cluster: LocalKafkaCluster,
    s3_server: LocalS3Server,
    tmp_path: Path,
) -> None:
    assert ha_yarn.active_resource_manager() == "rm1"
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, SOURCE, 3)
    create_topic(bootstrap, SINK, 3)
    produce_events(bootstrap, SOURCE, list(generate_events(3_000, seed=31)))
    checkpoint = f"s3://{S3_BUCKET}/{tmp_path.name}/checkpoint"
    spec = job_spec_dict(
        bootstrap_servers="from-connection:9092",
        checkpoint=checkpoint,
        job_name="ha_ip_count",
        source_topic=SOURCE,
        sink_topic=SINK,
        trigger_interval="2 seconds",
        max_offsets_per_trigger=600,
    )
    spec["spark_conf"] = {"spark.sql.shuffle.partitions": "2"}
    figures: dict[str, float | str] = {}
    handle = SubmitStreamingJobOperator(
        task_id="submit",
        job_spec=spec,
        kafka_conn_id="kafka_ha",
        spark_conn_id="spark_ha",
        aws_conn_id="s3_ha",
        jars=spark_jars_option(s3a=True),
        workdir=str(tmp_path / "jobs"),
        max_restarts=3,
    ).execute(cast(Context, {}))
    # What a stop or health task elsewhere gets: the reference as saved in XCom, before the
    # failover, naming both RMs.
    saved = json.loads(json.dumps(handle["job_ref"]))
    ref = job_ref_from_dict(saved)
    assert isinstance(ref, YarnJobRef) and ref.resource_manager == ha_yarn.web_url
    assert ref.resource_manager.count(",") == 1
    backend = YarnBackend()
    s3 = s3_server.storage_options()
    with s3_options_scope(s3):
        wait("a first committed batch", lambda: committed(checkpoint), lambda n: n >= 0, 300)
        owner = lease_owner(checkpoint)
        (am_pid,) = application_master_pids(ref.application_id)
        assert backend.status(ref).state == "RUNNING"

        # The active RM crashes in the middle of the job's life.
        killed_at = time.monotonic()
        ha_yarn.kill_resource_manager("rm1")
        failures: list[str] = []
        slowest_failure_s = 0.0
        deadline = killed_at + 120
        while True:  # bounded by the deadline
            asked = time.monotonic()
            try:
                status = backend.status(ref)
                break
            except ClusterUnavailableError as exc:
                slowest_failure_s = max(slowest_failure_s, time.monotonic() - asked)
                failures.append(str(exc))
            assert time.monotonic() < deadline, f"no status 120 s after the crash: {failures[-1]}"
            time.sleep(POLL_S)
        figures["status_unavailable_s"] = time.monotonic() - killed_at
        figures["failed_status_calls"] = len(failures)
        figures["slowest_failed_status_call_s"] = slowest_failure_s
        active = wait("rm2 active", ha_yarn.active_resource_manager, lambda a: a == "rm2", 60)
        figures["failover_s"] = time.monotonic() - killed_at  # an upper bound: polled after
        assert active == "rm2"
        # Without an active RM, status said so by its typed error, naming both addresses.
        if failures:
            assert "no active YARN ResourceManager" in failures[0], failures[0]
            assert ha_yarn.rm_web_url("rm1") in failures[0]
            print(f"\nstatus during the failover, first: {failures[0]}\nlast: {failures[-1]}")

        # Work-preserving: the same application, attempt and driver go on. The new active RM
        # shows the recovered application ACCEPTED ("Attempt recovered after RM restart")
        # until its application master, which never stopped, registers again.
        assert status.alive and status.detail["attempts"] == 1, status
        figures["first_state_after_failover"] = status.state
        wait("RUNNING again", lambda: backend.status(ref).state, lambda s: s == "RUNNING", 120)
        figures["crash_to_running_again_s"] = time.monotonic() - killed_at
        assert backend.status(ref).detail["attempts"] == 1
        assert backend.alive(ref) is True
        assert application_master_pids(ref.application_id) == [am_pid]
        before = committed(checkpoint)
        produce_events(bootstrap, SOURCE, list(generate_events(1_200, seed=32)))
        wait("a batch after the failover", lambda: committed(checkpoint), lambda n: n > before, 240)
        assert lease_owner(checkpoint) == owner
        figures["crash_to_next_commit_s"] = time.monotonic() - killed_at

    # rm1 comes back as the standby; a task on another host asks it first, is redirected,
    # and its kill (a PUT, which a redirect does not carry) reaches rm2 all the same.
    ha_yarn.start_resource_manager("rm1")
    assert ha_yarn.ha_state("rm1") == "STANDBY"
    standby = yarn_rest.TRANSPORT(
        "GET", f"{ha_yarn.rm_web_url('rm1')}/ws/v1/cluster/apps/{ref.application_id}", None
    )
    assert yarn_rest.classify(standby).kind == "standby", standby
    figures["standby_answer"] = f"HTTP {standby.status} {standby.body[:80]!r}"
    yarn_rest._LAST_ACTIVE.clear()
    kill_at = time.monotonic()
    backend.force_kill(ref)
    final = wait("the kill", lambda: backend.status(ref).state, lambda s: s == "KILLED", 120)
    figures["force_kill_to_killed_s"] = time.monotonic() - kill_at
    assert final == "KILLED"

    print(f"\nRM failover figures: {json.dumps(figures)}")
    (tmp_path / "rm_failover_figures.json").write_text(json.dumps(figures, indent=2))


def test_with_both_resource_managers_down_status_fails_fast_naming_both(
    connections: None, ha_yarn: LocalYarnCluster
) -> None:
    ref = YarnJobRef("ha_ip_count", "unused", "application_1_1", ha_yarn.web_url)
    for rm_id in ha_yarn.resource_manager_ids():
        ha_yarn.kill_resource_manager(rm_id)
    asked = time.monotonic()
    with pytest.raises(NoActiveResourceManagerError) as caught:
        YarnBackend().status(ref)
    took = time.monotonic() - asked
    message = str(caught.value)
    for rm_id in ("rm1", "rm2"):
        assert f"{ha_yarn.rm_web_url(rm_id)} did not answer" in message, message
    assert [a for a, _ in caught.value.tried] == ha_yarn.web_url.split(",")
    # Refused connections, each address once, no retry: well under one request's timeout.
    assert took < 2.0, took
    print(f"\nboth RMs down: status failed in {took:.3f}s: {message}")
