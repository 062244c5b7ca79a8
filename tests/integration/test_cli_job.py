"""`kafkaspark job submit|status|stop` at a terminal, against a real broker and a real local
driver: the reference a submit writes is what status and stop take, and bad references are
named with exit code 2."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef, job_ref_to_dict
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.cli_util import cli
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.integration.runtime_util import committed_batches

TOPIC = "cli_job_source"


def test_submit_status_stop_through_the_cli(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, TOPIC, 2)
    produce_numbered(bootstrap, TOPIC, 400)
    checkpoint = str(tmp_path / "checkpoint")
    spec = {
        "job_name": "cli_job",
        "source": {"bootstrap_servers": bootstrap, "subscribe": [TOPIC]},
        "sql": "SELECT partition, offset FROM source",
        "sink": {"kind": "parquet", "path": str(tmp_path / "out")},
        "checkpoint_location": checkpoint,
        "trigger_interval": "1 second",
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    ref_file = tmp_path / "cli_job.ref.json"
    submitted = cli(
        "job", "submit", str(tmp_path / "spec.json"), "--master", "local[1]",
        "--workdir", str(tmp_path / "jobs"), "--ref-out", str(ref_file), "--json",
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    handle = json.loads(submitted.stdout)
    assert json.loads(ref_file.read_text()) == handle["job_ref"]
    assert handle["job_ref"]["backend"] == "local" and handle["job_ref"]["pid"] == handle["pid"]
    try:
        deadline = time.monotonic() + 180
        while committed_batches(checkpoint) < 0:
            assert time.monotonic() < deadline, Path(handle["log_file"]).read_text()[-3000:]
            time.sleep(1)
        status = cli("job", "status", str(ref_file), "--json")
        assert status.returncode == 0, status.stderr
        seen = json.loads(status.stdout)
        assert seen["alive"] is True and seen["state"] == "running"
        assert seen["lease"] and "cli_job" in seen["lease"]
    finally:
        stopped = cli(
            "job", "stop", str(ref_file), "--savepoint-root", str(tmp_path / "sp"), "--json"
        )
    assert stopped.returncode == 0, stopped.stderr
    result = json.loads(stopped.stdout)
    assert "clean" in result["stopped"] and result["savepoint_id"].startswith("cli_job-")
    after = json.loads(cli("job", "status", str(ref_file), "--json").stdout)
    assert after["alive"] is False and after["lease"] is None
    assert "stop" in after["stopped"]


def test_bad_references_exit_2_naming_what_is_wrong(tmp_path: Path) -> None:
    missing = cli("job", "status", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "nope.json: cannot read" in missing.stderr
    partial = cli("job", "status", '{"backend": "yarn", "job_name": "j"}')
    assert partial.returncode == 2
    assert "yarn reference lacks application_id, checkpoint, resource_manager" in partial.stderr
    other = json.dumps({"backend": "k8s", "job_name": "j"})
    wrong = cli("job", "stop", other)
    assert wrong.returncode == 2 and "backend 'k8s' is not one of" in wrong.stderr


def test_status_and_stop_from_the_job_name_and_checkpoint(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    """No reference kept: the submit left it in the checkpoint's submitted marker, which
    status and stop read, as the stop operator does."""
    bootstrap = kafka_cluster.bootstrap_servers
    topic = "cli_job_by_name"
    create_topic(bootstrap, topic, 1)
    produce_numbered(bootstrap, topic, 100)
    checkpoint = str(tmp_path / "checkpoint")
    spec = {
        "job_name": "cli_by_name",
        "source": {"bootstrap_servers": bootstrap, "subscribe": [topic]},
        "sql": "SELECT partition, offset FROM source",
        "sink": {"kind": "parquet", "path": str(tmp_path / "out")},
        "checkpoint_location": checkpoint,
        "trigger_interval": "1 second",
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    submitted = cli(
        "job", "submit", str(tmp_path / "spec.json"), "--master", "local[1]",
        "--workdir", str(tmp_path / "jobs"), "--json",
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    handle = json.loads(submitted.stdout)
    names = ("--job", "cli_by_name", "--checkpoint", checkpoint)
    try:
        deadline = time.monotonic() + 180
        while committed_batches(checkpoint) < 0:
            assert time.monotonic() < deadline, Path(handle["log_file"]).read_text()[-3000:]
            time.sleep(1)
        status = cli("job", "status", *names, "--json")
        assert status.returncode == 0, status.stderr
        seen = json.loads(status.stdout)
        assert seen["alive"] is True and seen["pid"] == handle["pid"]
        assert seen["lease"] and "cli_by_name" in seen["lease"]

        other = cli("job", "stop", "--job", "other_job", "--checkpoint", checkpoint)
        assert other.returncode == 2, other.stderr
        assert "submitted.json names job 'cli_by_name', not 'other_job'" in other.stderr
        assert len(other.stderr.strip().splitlines()) == 1
        nowhere = cli("job", "status", "--job", "cli_by_name", "--checkpoint", str(tmp_path))
        assert nowhere.returncode == 2 and "submitted.json: not there" in nowhere.stderr
        unnamed = cli("job", "stop", "--job", "cli_by_name")
        assert unnamed.returncode == 2 and "--job NAME and --checkpoint URL" in unnamed.stderr
    finally:
        stopped = cli("job", "stop", *names, "--savepoint-root", str(tmp_path / "sp"), "--json")
    assert stopped.returncode == 0, stopped.stderr
    result = json.loads(stopped.stdout)
    assert "clean" in result["stopped"] and result["savepoint_id"].startswith("cli_by_name-")
    after = json.loads(cli("job", "status", *names, "--json").stdout)
    assert after["alive"] is False and after["lease"] is None and "stop" in after["stopped"]


def test_a_retried_submit_takes_up_the_driver_its_first_try_started(tmp_path: Path) -> None:
    # The first try started a driver (its launcher runs here: a stand-in process) and wrote its
    # submitted marker, then was lost before its result was kept; the driver has not taken
    # its lease yet. The retry, by the same submitter, takes that driver up instead of
    # starting a second one; any other submitter finds the job starting.
    checkpoint = str(tmp_path / "checkpoint")
    spec = {
        "job_name": "retried",
        "source": {"bootstrap_servers": "127.0.0.1:1", "subscribe": ["t"]},
        "sql": "SELECT * FROM source",
        "sink": {"kind": "parquet", "path": str(tmp_path / "out")},
        "checkpoint_location": checkpoint,
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    launcher = subprocess.Popen(["sleep", "120"])
    try:
        ref = LocalJobRef("retried", checkpoint, socket.gethostname(), launcher.pid, "", "")
        ControlFolder(checkpoint).write_submitted(
            SubmittedMarker(
                now_ms(), "retried", "cli:first-try", socket.gethostname(),
                pid=launcher.pid, job_ref=job_ref_to_dict(ref),
            )
        )  # fmt: skip
        argv = ["job", "submit", str(tmp_path / "spec.json"), "--master", "local[1]", "--json"]
        env = {**os.environ, "USER": "first-try"}
        retried = cli(*argv, "--workdir", str(tmp_path / "jobs"), env=env)
        assert retried.returncode == 0, retried.stderr
        handle = json.loads(retried.stdout)
        assert handle["adopted"] is True and handle["job_ref"] == job_ref_to_dict(ref)
        assert not (tmp_path / "jobs").exists()  # nothing was started

        other = cli(*argv, "--workdir", str(tmp_path / "jobs"), env={**env, "USER": "ops"})
        assert other.returncode != 0
        assert "is starting: a driver submitted by cli:first-try" in other.stderr, other.stderr

        # Once the launcher is gone, its start is over: a submit goes ahead (and here meets
        # the bootstrap probe, on a port nothing listens on).
        launcher.kill()
        launcher.wait(10)
        after = cli(*argv, "--workdir", str(tmp_path / "jobs"), env={**env, "USER": "ops"})
        assert "is starting" not in after.stderr and "bootstrap" in after.stderr, after.stderr
    finally:
        launcher.kill()
        launcher.wait(10)
