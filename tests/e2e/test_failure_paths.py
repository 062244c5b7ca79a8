"""The failure paths through Airflow (`airflow dags test`, real Airflow 3 on SQLite) against the
real local stack: code the driver cannot import, a driver that dies with no restart budget
left, and the example restart window rolling back an upgrade that is not healthy."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.examples.access_events import generate_events, produce_events
from airflow_provider_kafkaspark.lifecycle.observe import latest_committed, live_lease
from airflow_provider_kafkaspark.lifecycle.stop import stop_job
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic

ROOT = Path(__file__).resolve().parents[2]
TEST_DAGS = Path(__file__).parent / "dags"
SOURCE, SINK = "fail_source", "fail_sink"
JOB = "fail_ip_count"


@pytest.fixture(scope="module")
def env(
    kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, SOURCE, 2)
    create_topic(bootstrap, SINK, 2)
    produce_events(bootstrap, SOURCE, list(generate_events(2_000, seed=11)))
    home = tmp_path_factory.mktemp("failure-paths")
    values = {
        **os.environ,
        "AIRFLOW_HOME": str(home / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(TEST_DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps(
            {"conn_type": "kafka", "extra": {"bootstrap.servers": bootstrap}}
        ),
        "KAFKASPARK_HOME": str(home / "kafkaspark"),
        "KAFKASPARK_JOB_NAME": JOB,
        "KAFKASPARK_SOURCE_TOPIC": SOURCE,
        "KAFKASPARK_SINK_TOPIC": SINK,
    }
    subprocess.run(
        [_airflow(), "db", "migrate"], env=values, check=True, capture_output=True, timeout=300
    )
    yield values
    for name in ("bad_code", "no_budget", JOB):
        checkpoint = f"{values['KAFKASPARK_HOME']}/{name}/checkpoint"
        stop_job(checkpoint, requested_by="teardown", reason="cleanup", drain_timeout_s=60)


def _airflow() -> str:
    return str(Path(sys.executable).parent / "airflow")


def dags_test(env: dict[str, str], dag_id: str) -> str:
    """Run the DAG; failed tasks are expected here, so the exit code is not checked."""
    proc = subprocess.run(
        [_airflow(), "dags", "test", dag_id],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    return proc.stdout + proc.stderr


def task_runs(env: dict[str, str], dag_id: str) -> dict[str, tuple[str, float, float]]:
    """task id -> (state, start, end as epoch seconds) of the DAG's latest run."""
    with sqlite3.connect(Path(env["AIRFLOW_HOME"]) / "airflow.db") as db:
        run_id = db.execute(
            "SELECT run_id FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", (dag_id,)
        ).fetchone()[0]
        rows = db.execute(
            "SELECT task_id, state, start_date, end_date FROM task_instance "
            "WHERE dag_id = ? AND run_id = ?",
            (dag_id, run_id),
        ).fetchall()
    return {task: (state, _epoch(start), _epoch(end)) for task, state, start, end in rows}


def _epoch(value: str | None) -> float:
    if not value:
        return float("nan")
    return datetime.fromisoformat(value.replace(" ", "T")).timestamp()


def test_code_the_driver_cannot_import_fails_the_sensor_with_the_import_error(
    env: dict[str, str],
) -> None:
    output = dags_test(env, "kafkaspark_test_bad_code")
    runs = task_runs(env, "kafkaspark_test_bad_code")
    assert runs["submit"][0] == "success", output[-4000:]
    assert runs["wait_healthy"][0] == "failed", output[-4000:]
    assert "No module named 'kafkaspark_no_such_dependency'" in output
    assert "bad job" in output and "driver log: " in output
    took = runs["wait_healthy"][2] - runs["submit"][1]
    print(f"bad code: submit start -> sensor failed in {took:.1f} s")
    # Reported by the driver, not found by waiting out the sensor's 180 s startup grace.
    assert took < 180
    # Not restarted: one driver start, and the supervisor says it ended.
    supervisor = Path(env["KAFKASPARK_HOME"], "bad_code/checkpoint/_kafkaspark/supervisor.json")
    state = json.loads(supervisor.read_text())
    assert state["attempt"] == 1 and state["ended"] and state["last_exit"] == 4


def test_a_driver_killed_with_no_restart_budget_fails_the_sensor_at_once(
    env: dict[str, str],
) -> None:
    output = dags_test(env, "kafkaspark_test_no_restart_budget")
    runs = task_runs(env, "kafkaspark_test_no_restart_budget")
    assert runs["kill_the_driver_once_it_runs"][0] == "success", output[-4000:]
    assert runs["wait_healthy"][0] == "failed", output[-4000:]
    assert "restart budget is spent" in output
    took = runs["wait_healthy"][2] - runs["kill_the_driver_once_it_runs"][2]
    print(f"no budget: kill -> sensor failed in {took:.1f} s")
    assert took < 180


@pytest.mark.extended(covered_by="test_compat_check.py (the refusal), test_deploy.py (a rollback)")
def test_restart_window_refuses_an_incompatible_upgrade_and_rolls_back_an_unhealthy_one(
    env: dict[str, str], kafka_cluster: LocalKafkaCluster
) -> None:
    examples = {**env, "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags")}
    deploy = dags_test(examples, "kafkaspark_deploy")
    assert task_runs(examples, "kafkaspark_deploy")["deploy"][0] == "success", deploy[-4000:]
    checkpoint = f"{env['KAFKASPARK_HOME']}/{JOB}/checkpoint"
    running = live_lease(checkpoint)
    assert running is not None
    upgrade = {
        **examples,
        "KAFKASPARK_UPGRADE_TRANSFORMATION": "broken_upgrade:transform",
        "KAFKASPARK_UPGRADE_PYTHON_PATH": str(TEST_DAGS / "user_code"),
    }
    # The compatibility check runs the new code on a copy first: refused, job untouched.
    output = dags_test(upgrade, "kafkaspark_restart_window")
    assert task_runs(upgrade, "kafkaspark_restart_window")["upgrade"][0] == "failed"
    assert "No module named 'kafkaspark_no_such_dependency'" in output
    assert "the running job was not touched" in output, output[-6000:]
    still = live_lease(checkpoint)
    assert still is not None and still.owner_id == running.owner_id

    # Without the check, the upgrade reaches the health gate and is rolled back.
    output = dags_test({**upgrade, "KAFKASPARK_COMPAT_CHECK": "false"}, "kafkaspark_restart_window")
    assert task_runs(upgrade, "kafkaspark_restart_window")["upgrade"][0] == "failed"
    assert "No module named 'kafkaspark_no_such_dependency'" in output
    assert "rolled back to" in output, output[-6000:]
    with sqlite3.connect(Path(env["AIRFLOW_HOME"]) / "airflow.db") as db:
        found = db.execute(
            "SELECT value FROM xcom WHERE dag_id = 'kafkaspark_deploy' AND key = 'return_value'"
        ).fetchone()
    deployed = json.loads(found[0].decode() if isinstance(found[0], bytes) else found[0])
    record = json.loads(Path(checkpoint, "_kafkaspark", "deployment.json").read_text())
    # The rolled-back job runs the spec the deploy made stable, and commits new batches.
    assert record["status"] == "ROLLED_BACK"
    assert record["stable"]["spec_hash"] == deployed["spec_hash"]
    before = latest_committed(checkpoint)
    more = generate_events(500, seed=12, start_ms=1_700_000_600_000)
    produce_events(kafka_cluster.bootstrap_servers, SOURCE, list(more))
    deadline = time.monotonic() + 180
    while not (live_lease(checkpoint) and (latest_committed(checkpoint) or -1) > (before or -1)):
        assert time.monotonic() < deadline, "the rolled-back job committed no new batch in 180 s"
        time.sleep(1)
