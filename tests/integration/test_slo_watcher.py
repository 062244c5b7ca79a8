"""The SLO watcher on the real stack: a real Kafka broker, a real Spark driver that reads at
most `PER_BATCH` records a batch, and the watcher's DAG run by `airflow dags test` (real
Airflow 3 on SQLite: the sensor defers, its trigger runs in line, the task resumes and defers
again at each alert). A producer floods the topic faster than the job can read, so the lag
grows past the SLO; the producer stops, the job catches up, and the all-clear comes. The
notifier is a real `BaseNotifier` that appends to a file the test reads while the DAG runs;
the metrics are read from a StatsD socket, as Airflow sends them."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from airflow_provider_kafkaspark.core.control.folder import request_stop
from kafkaspark_devstack.drivers import kill_driver, read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.integration.runtime_util import committed_batches, has_lease, start, wait_until

pytestmark = pytest.mark.airflow

ROOT = Path(__file__).resolve().parents[2]
DAG_ID = "kafkaspark_test_watch"
JOB = "watch_lag"  # the checkpoint's folder: the name in the metrics
TOPIC = "watch_lag"
PER_BATCH = 500  # the job reads at most this many records a batch, a batch a second
MAX_LAG = 3000
FLOOD_PER_S = 3000
SENTINEL = "w4tch-sasl-Secret"


class Flood(threading.Thread):
    """Produces `FLOOD_PER_S` records a second, in tenths, until stopped (at most 120 s)."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(name="flood", daemon=True)
        self.producer: Producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.halt = threading.Event()
        self.sent = 0

    def run(self) -> None:
        ends = time.monotonic() + 120
        while not self.halt.is_set() and time.monotonic() < ends:
            for _ in range(FLOOD_PER_S // 10):
                value = str(self.sent).encode()
                self.producer.produce(TOPIC, key=value, value=value)
                self.sent += 1
            self.producer.flush(10)
            self.halt.wait(0.1)
        del self.producer

    def stop(self) -> None:
        self.halt.set()
        self.join(30)


class StatsdSink(threading.Thread):
    """A StatsD server on loopback that keeps every line it receives."""

    def __init__(self) -> None:
        super().__init__(name="statsd", daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.5)
        self.port = int(self.sock.getsockname()[1])
        self.lines: list[str] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                packet = self.sock.recv(65536)
            except TimeoutError:
                continue
            self.lines.extend(packet.decode(errors="replace").splitlines())

    def values(self, name: str) -> list[float]:
        """The values sent for `name` (with Airflow's `airflow.` prefix), in order."""
        prefix = f"airflow.{name}:"
        return [
            float(line[len(prefix) :].split("|")[0])
            for line in self.lines
            if line.startswith(prefix)
        ]

    def stop(self) -> None:
        self.halt.set()
        self.join(5)
        self.sock.close()


def airflow_cli() -> str:
    return str(Path(sys.executable).parent / "airflow")


def sent(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def kinds(path: Path) -> list[str]:
    return [entry["alert"]["kind"] for entry in sent(path)]


def test_the_watcher_pages_once_past_the_lag_slo_and_once_when_it_clears(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    began = time.monotonic()
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, TOPIC, 2)
    produce_numbered(bootstrap, TOPIC, 200)
    checkpoint = str(tmp_path / JOB / "checkpoint")
    notifications = tmp_path / "notifications.jsonl"
    spec = {
        "job_name": JOB,
        "source": {
            "bootstrap_servers": bootstrap,
            "subscribe": [TOPIC],
            "max_offsets_per_trigger": PER_BATCH,
        },
        "sql": "SELECT partition, offset, CAST(value AS STRING) AS value FROM source",
        "sink": {"kind": "parquet", "path": str(tmp_path / "out")},
        "checkpoint_location": checkpoint,
        "trigger_interval": "1 second",
        "lease_ttl_s": 6,
    }
    statsd = StatsdSink()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(Path(__file__).parent / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__METRICS__STATSD_ON": "True",
        "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
        "AIRFLOW__METRICS__STATSD_PORT": str(statsd.port),
        "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps(
            {
                "conn_type": "kafka",
                "extra": {"bootstrap.servers": bootstrap, "sasl.password": SENTINEL},
            }
        ),
        "KAFKASPARK_WATCH_CHECKPOINT": checkpoint,
        "KAFKASPARK_WATCH_NOTIFICATIONS": str(notifications),
        "KAFKASPARK_WATCH_MAX_LAG": str(MAX_LAG),
    }
    # Airflow's database is made while the driver starts.
    migrate = subprocess.Popen(
        [airflow_cli(), "db", "migrate"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    handle = start(spec, tmp_path / "run")
    flood = Flood(bootstrap)
    output = tmp_path / "dags-test.log"
    dag_run: subprocess.Popen[bytes] | None = None
    timeline: dict[str, float] = {}
    try:
        wait_until(handle, "the first committed batch", lambda: committed_batches(checkpoint) >= 0)
        wait_until(handle, "the driver's lease", lambda: has_lease(checkpoint))
        _, migrate_err = migrate.communicate(timeout=180)
        assert migrate.returncode == 0, migrate_err.decode()[-3000:]
        statsd.start()
        with output.open("wb") as log:
            dag_run = subprocess.Popen(
                [airflow_cli(), "dags", "test", DAG_ID],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        timeline["dags test started"] = time.monotonic() - began

        def seen() -> str:
            lags = statsd.values(f"kafkaspark.{JOB}.lag_records")[-5:]
            return f"notifications {sent(notifications)}; last lags {lags}"

        # The flood starts once the watcher has seen the SLO met, so that it sees the lag
        # grow past it (its first poll sends the gauges).
        wait_until(
            handle,
            "the watcher's first poll",
            lambda: 0.0 in statsd.values(f"kafkaspark.{JOB}.slo_breached"),
            120,
            seen=lambda: output.read_text()[-3000:],
        )
        timeline["first poll"] = time.monotonic() - began
        flood.start()

        wait_until(
            handle,
            "the breach announcement",
            lambda: kinds(notifications) == ["breach"],
            120,
            seen=seen,
        )
        timeline["breach announced"] = time.monotonic() - began
        flood.stop()  # the producer stops: the job catches up
        wait_until(handle, "the all-clear", lambda: len(kinds(notifications)) >= 2, 180, seen=seen)
        timeline["clear announced"] = time.monotonic() - began
        request_stop(checkpoint, requested_by="test", reason="watch test done")
        assert wait_exit(handle, 120) == 0, read_log(handle)
        assert dag_run.wait(120) == 0, output.read_text()[-6000:]
        timeline["watch ended"] = time.monotonic() - began
    finally:
        if flood.is_alive():
            flood.stop()
        if pid_alive(handle.pid):
            kill_driver(handle)
        if dag_run is not None and dag_run.poll() is None:
            dag_run.kill()
            dag_run.wait(30)
        if migrate.poll() is None:
            migrate.kill()
        statsd.stop()

    text = output.read_text()
    print(f"slo watcher timeline (s): {timeline}; flooded {flood.sent} records")
    # Exactly one announcement while the breach lasted, then one all-clear.
    entries = sent(notifications)
    assert [e["alert"]["kind"] for e in entries] == ["breach", "clear"], entries
    breach, clear = entries[0]["alert"], entries[1]["alert"]
    assert breach["slos"] == ["lag"] and breach["notification"] == 1
    assert breach["lag_records"] > MAX_LAG and breach["max_lag_records"] == MAX_LAG
    assert breach["lag_by_topic"] == {TOPIC: breach["lag_records"]}
    assert f"lag {breach['lag_records']:,} records (SLO <= {MAX_LAG:,})" in breach["message"]
    assert entries[0]["line"] == f"{JOB} breach lag={breach['lag_records']}"  # rendered
    assert clear["lag_records"] <= MAX_LAG and clear["breach_s"] > 0
    assert entries[1]["line"] == f"{JOB} clear lag={clear['lag_records']}"
    # The watcher saw the SLO met, then breached over several polls (the back-off kept it to
    # one page), then met again.
    breached = statsd.values(f"kafkaspark.{JOB}.slo_breached")
    assert breached[0] == 0.0 and breached.count(1.0) >= 2 and breached[-1] == 0.0, breached
    lags = statsd.values(f"kafkaspark.{JOB}.lag_records")
    assert lags[0] <= MAX_LAG and max(lags) >= breach["lag_records"] and len(lags) >= 5, lags
    assert statsd.values(f"kafkaspark.{JOB}.lag_records.{TOPIC}"), statsd.lines[-20:]
    assert statsd.values(f"kafkaspark.{JOB}.seconds_since_commit")
    assert statsd.values(f"kafkaspark.{JOB}.slo_breach") == [1.0]
    assert statsd.values(f"kafkaspark.{JOB}.slo_clear") == [1.0]
    # The sensor ended with the clean stop, as a success with its summary.
    assert "stopped cleanly, waiting for a restart" in text, text[-4000:]
    assert f"watch of {JOB} ends (stopped)" in text, text[-4000:]
    with sqlite3.connect(tmp_path / "airflow" / "airflow.db") as db:
        (state,) = db.execute(
            "SELECT state FROM task_instance WHERE dag_id = ? AND task_id = 'watch_slos'", (DAG_ID,)
        ).fetchone()
    assert state == "success"
    assert SENTINEL not in text
    took = time.monotonic() - began
    print(f"slo watcher test took {took:.0f} s")
