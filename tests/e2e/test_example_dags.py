"""The example DAGs, run with `airflow dags test` (real Airflow 3 on SQLite) against the
real local stack: deploy, restart window, a partition added while the job is stopped,
reconcile, deploy again; the exactly-once output has no duplicate and no gap."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions

from airflow_provider_kafkaspark.core.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.core.control import ControlFolder
from airflow_provider_kafkaspark.core.kafka_admin import KafkaFacade
from airflow_provider_kafkaspark.core.observe import caught_up, end_offsets
from airflow_provider_kafkaspark.examples.access_events import (
    AccessEvent,
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.examples.ip_count import expected_counts
from airflow_provider_kafkaspark.lifecycle import stop_job
from airflow_provider_kafkaspark.local.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, read_all_values

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


def produce_slowly(bootstrap: str, events: list[AccessEvent], chunks: int, pause_s: float) -> None:
    size = -(-len(events) // chunks)
    for start in range(0, len(events), size):
        produce_events(bootstrap, SOURCE, events[start : start + size])
        time.sleep(pause_s)


def wait_caught_up(bootstrap: str, checkpoint: str, timeout: float = 300) -> None:
    kafka = KafkaFacade({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        try:
            if caught_up(CheckpointReader(checkpoint).position(), end_offsets(kafka, [SOURCE])):
                return
        except Exception:  # noqa: BLE001 - the checkpoint may not exist yet
            pass
        assert time.monotonic() < deadline, "the job did not catch up"
        time.sleep(1)


def test_deploy_restart_window_reconcile_exactly_once(
    kafka_cluster: LocalKafkaCluster, airflow_env: dict[str, str]
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    checkpoint = f"{airflow_env['KAFKASPARK_HOME']}/e2e_ip_count/checkpoint"
    create_topic(bootstrap, SOURCE, 3)
    create_topic(bootstrap, SINK, 3)
    create_topic(bootstrap, EXTRA, 1)
    events = list(generate_events(12_000, seed=5))
    first, second = events[:6_000], events[6_000:]
    # Data keeps arriving while the DAGs run, as in production: a job with no new input
    # commits no new batches, and the health sensors wait for new batches.
    trickle = threading.Thread(target=produce_slowly, args=(bootstrap, first, 60, 1.5), daemon=True)
    trickle.start()

    deploy = dags_test(airflow_env, "kafkaspark_deploy")
    assert "submitted e2e_ip_count" in deploy
    assert ControlFolder(checkpoint).read_lease() is not None  # the job keeps running

    window = dags_test(airflow_env, "kafkaspark_restart_window")
    assert "savepoint e2e_ip_count-" in window
    assert "restored for submit" in window

    trickle.join(300)
    assert not trickle.is_alive()
    # The job stops; while it is down a partition is added and a topic deleted.
    stopped = stop_job(checkpoint, requested_by="e2e", reason="maintenance", drain_timeout_s=120)
    assert stopped is not None and stopped.clean
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(SOURCE, 4)])[SOURCE].result()
    admin.delete_topics([EXTRA])[EXTRA].result()
    time.sleep(2)
    produce_events(bootstrap, SOURCE, second)
    reconcile = dags_test(airflow_env, "kafkaspark_reconcile")
    assert "NEW_PARTITION" in reconcile and f"{SOURCE}-3" in reconcile
    assert "TOPIC_MISSING" in reconcile and EXTRA in reconcile

    dags_test(airflow_env, "kafkaspark_deploy")  # subscribe: the new partition is read
    flush_ms = max(e.event_time_ms for e in events) + 60_000
    produce_events(bootstrap, SOURCE, [AccessEvent("255.255.255.255", flush_ms, "/flush", 200)])
    wait_caught_up(bootstrap, checkpoint)
    stop_job(checkpoint, requested_by="e2e", reason="end", drain_timeout_s=120)

    seen: Counter[tuple[int, str]] = Counter()
    counts: dict[tuple[int, str], int] = {}
    for value in read_all_values(bootstrap, SINK, 3):
        row = json.loads(value)
        key = (int(row["window_start_ms"]), str(row["ip"]))
        seen[key] += 1
        counts[key] = int(row["count"])
    assert sum(n - 1 for n in seen.values()) == 0, "duplicates after the restart window"
    assert counts == expected_counts(events, closed_before_ms=flush_ms - 10_000)

    # Nothing the tasks pushed to XCom holds the connection's password either.
    with sqlite3.connect(Path(airflow_env["AIRFLOW_HOME"]) / "airflow.db") as db:
        xcoms = [str(row) for row in db.execute("SELECT task_id, key, value FROM xcom")]
    assert any("submit" in x for x in xcoms), "expected the submit handle in XCom"
    assert not [x for x in xcoms if SENTINEL in x]


def backfill_counts(output_root: Path) -> Counter[tuple[int, str]]:
    import pyarrow.parquet as pq

    counts: Counter[tuple[int, str]] = Counter()
    for row in pq.read_table(str(output_root)).to_pylist():
        value = json.loads(row["value"])
        counts[(int(value["window_start_ms"]), str(value["ip"]))] += int(value["count"])
    return counts


def test_backfill_three_intervals_and_rerun(
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
    # `airflow dags test DAG DATE` runs the interval that ends at DATE (Airflow 3).
    dates = ["2023-11-14T22:15:00+00:00", "2023-11-14T22:16:00+00:00", "2023-11-14T22:17:00+00:00"]
    for date in dates:
        dags_test(env, "kafkaspark_backfill", date)
    output_root = Path(env["KAFKASPARK_HOME"]) / "e2e_bf" / "backfill"
    minutes = [minute0 + i * 60_000 for i in range(4)]
    assert sorted(p.name for p in output_root.glob("interval=*")) == [
        f"interval={a}-{b}" for a, b in itertools.pairwise(minutes)
    ]
    counts = backfill_counts(output_root)
    in_range = [e for e in events if e.event_time_ms < minute0 + 180_000]
    assert counts == expected_counts(in_range, closed_before_ms=minute0 + 180_000)
    assert sum(counts.values()) == len(in_range)

    dags_test(env, "kafkaspark_backfill", dates[1])  # re-run: replaces, never duplicates
    assert backfill_counts(output_root) == counts
