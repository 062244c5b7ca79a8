"""The example DAGs, run with `airflow dags test` (real Airflow 3 on SQLite) against the
real local stack: the README demo's story (deploy, restart window, a partition added while
the job is stopped, reconcile, deploy again, backfill) with an exactly-once check, and the
backfill DAG over three intervals with a re-run."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.examples.access_events import (
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.examples.ip_count import expected_counts
from airflow_provider_kafkaspark.lifecycle.stop import stop_job
from kafkaspark_devstack import demo
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic

ROOT = Path(__file__).resolve().parents[2]
SENTINEL = "s3ntinel-Pa55word"
SOURCE, SINK, EXTRA = "e2e_source", "e2e_sink", "e2e_extra"


@pytest.fixture(scope="module")
def airflow_env(
    kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    home = tmp_path_factory.mktemp("airflow-home")
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps(
            {
                "conn_type": "kafka",
                "extra": {
                    "bootstrap.servers": kafka_cluster.bootstrap_servers,
                    # A secret the package must never show: not used by a PLAINTEXT broker.
                    "sasl.password": SENTINEL,
                },
            }
        ),
        "KAFKASPARK_HOME": str(tmp_path_factory.mktemp("kafkaspark-home")),
        "KAFKASPARK_JOB_NAME": "e2e_ip_count",
        "KAFKASPARK_SOURCE_TOPIC": SOURCE,
        "KAFKASPARK_SINK_TOPIC": SINK,
        "KAFKASPARK_RECONCILE_TOPICS": EXTRA,
    }
    airflow = str(Path(sys.executable).parent / "airflow")
    subprocess.run(
        [airflow, "db", "migrate"], env=env, check=True, capture_output=True, timeout=300
    )
    yield env
    checkpoint = f"{env['KAFKASPARK_HOME']}/e2e_ip_count/checkpoint"
    stop_job(
        checkpoint,
        requested_by="e2e teardown",
        reason="cleanup",
        drain_timeout_s=60,
        allow_force_kill=True,
    )


def dags_test(env: dict[str, str], dag_id: str, logical_date: str | None = None) -> str:
    airflow = str(Path(sys.executable).parent / "airflow")
    proc = subprocess.run(
        [airflow, "dags", "test", dag_id, *([logical_date] if logical_date else [])],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{dag_id} failed:\n{output[-6000:]}"
    assert SENTINEL not in output, f"{dag_id} printed the connection's password"
    return output


@pytest.mark.extended(
    covered_by="tests/cluster/test_airflow_on_bed.py (these DAG files) and `make demo`"
)
def test_demo_story_through_the_example_dags_is_exactly_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README demo (demo.run) is this test: deploy, restart window with a partition
    added while down, maintenance stop with a partition added and a watched topic deleted,
    reconcile, deploy again, backfill; every DAG run by `airflow dags test`."""
    outputs: dict[str, list[str]] = {}

    def seen(dag_id: str, output: str) -> None:
        outputs.setdefault(dag_id, []).append(output)

    summary = demo.run(3000, tmp_path, connection_extra={"sasl.password": SENTINEL}, on_output=seen)
    assert sorted(outputs) == [
        "kafkaspark_backfill",
        "kafkaspark_deploy",
        "kafkaspark_reconcile",
        "kafkaspark_restart_window",
    ]
    assert "deploy of ip_count: submit" in outputs["kafkaspark_deploy"][0]
    window = outputs["kafkaspark_restart_window"][0]
    assert "deploy of ip_count: upgrade" in window
    assert "compatibility check passed" in window
    assert "savepoint ip_count-" in window and "restored for submit" in window
    # Brought back after the maintenance stop: a submit again, not an upgrade.
    assert "deploy of ip_count: submit" in outputs["kafkaspark_deploy"][1]
    # The exactly-once output: every window once, with the count the input implies.
    assert summary["events_produced"] == 3001  # plus the event that closes the windows
    assert summary["records_counted"] == 3000, summary["wrong_windows"]
    assert summary["duplicates"] == 0 and summary["missing"] == 0, summary["wrong_windows"]
    assert summary["wrong_counts"] == 0, summary["wrong_windows"]
    assert summary["wrong_windows"] == []
    assert summary["windows_written"] == summary["windows_expected"] > 0
    assert summary["lag_group_matches_checkpoint"] is True
    # Partitions added during the window and while stopped were read from their start.
    assert summary["partition_added_during_window"] is True
    assert summary["source_partitions_at_end"] == 5
    # The reconcile DAG saw the partition added while stopped and the deleted topic.
    assert summary["reconcile_findings"].get("NEW_PARTITION", 0) >= 1
    assert summary["reconcile_findings"].get("TOPIC_MISSING", 0) >= 1
    assert summary["savepoints"] >= 2  # the window's and the final one
    assert summary["backfill_windows"] > 0 and summary["backfill_matches_streaming"] is True
    # A person watching sees the job move while a DAG runs.
    progress = [line for line in capsys.readouterr().out.splitlines() if " ... " in line]
    assert any("committed" in line and "records read" in line for line in progress), progress

    # The connection's password is in no task output and no XCom.
    for dag_id, texts in outputs.items():
        assert not [t for t in texts if SENTINEL in t], f"{dag_id} printed the password"
    with sqlite3.connect(tmp_path / "airflow" / "airflow.db") as db:
        xcoms = [str(row) for row in db.execute("SELECT task_id, key, value FROM xcom")]
    assert any("submit" in x for x in xcoms), "expected the submit handle in XCom"
    assert not [x for x in xcoms if SENTINEL in x]


def test_backfill_an_interval_and_rerun_it(
    kafka_cluster: LocalKafkaCluster, airflow_env: dict[str, str]
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = "e2e_backfill_source"
    env = {**airflow_env, "KAFKASPARK_SOURCE_TOPIC": topic, "KAFKASPARK_JOB_NAME": "e2e_bf"}
    create_topic(bootstrap, topic, 3)
    # Three minutes of events from the DAG's start date; record timestamps = event times.
    minute0 = 1_700_000_040_000  # 2023-11-14T22:14:00Z
    events = list(generate_events(9_000, seed=9, start_ms=minute0, events_per_second=50))
    produce_events(bootstrap, topic, events)
    # `airflow dags test DAG DATE` runs the interval that ends at DATE (Airflow 3). The demo
    # story (above) backfills all three intervals; here the second one, then again.
    dags_test(env, "kafkaspark_backfill", "2023-11-14T22:16:00+00:00")
    output_root = Path(env["KAFKASPARK_HOME"]) / "e2e_bf" / "backfill"
    start, end = minute0 + 60_000, minute0 + 120_000
    assert [p.name for p in output_root.glob("interval=*")] == [f"interval={start}-{end}"]
    counts = demo.backfill_counts(output_root)
    in_range = [e for e in events if start <= e.event_time_ms < end]
    assert counts == expected_counts(in_range, closed_before_ms=end)
    assert sum(counts.values()) == len(in_range) > 0

    dags_test(env, "kafkaspark_backfill", "2023-11-14T22:16:00+00:00")  # re-run: replaces
    assert demo.backfill_counts(output_root) == counts
