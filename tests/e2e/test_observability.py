"""What a deployment watches a job by, from a real run (`airflow dags test`, real Airflow 3 on
SQLite, the local Kafka and a local Spark driver): the operators' metrics arriving at a
StatsD listener through Airflow's own stats client, the submit's OpenLineage events (file
transport) naming its Kafka topics, and the links of the task instances, the Spark UI one
answering while the driver runs (tests/e2e/dags/kafkaspark_observability.py)."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.examples.access_events import generate_events, produce_events
from airflow_provider_kafkaspark.lifecycle.stop import stop_job
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic

DAG_FILE = Path(__file__).parent / "dags" / "kafkaspark_observability.py"
DAG_ID = "kafkaspark_test_observability"
SOURCE, SINK = "obs_source", "obs_sink"
JOB = "obs_obs"  # the DAG's job: KAFKASPARK_JOB_NAME + "_obs"
BASE_URL = "http://airflow.example:8080"


class StatsdListener:
    """A StatsD server as far as this test needs one: every UDP datagram's lines, kept."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port: int = self.sock.getsockname()[1]
        self.lines: list[str] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._listen, daemon=True)

    def _listen(self) -> None:
        while not self._done.is_set():
            try:
                data = self.sock.recv(65535)
            except TimeoutError:
                continue
            self.lines.extend(data.decode("utf-8", "replace").splitlines())

    def __enter__(self) -> StatsdListener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(5)
        self.sock.close()

    def values(self, name: str, kind: str) -> list[float]:
        """The values sent for `name` (with Airflow's `airflow.` prefix) of StatsD type `kind`
        (`c`, `g`), in order."""
        found = []
        for line in self.lines:
            stat, _, rest = line.partition(":")
            value, _, rest = rest.partition("|")
            if stat == f"airflow.{name}" and rest.split("|")[0] == kind:
                found.append(float(value))
        return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def run(
    kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, SOURCE, 2)
    create_topic(bootstrap, SINK, 2)
    produce_events(bootstrap, SOURCE, list(generate_events(2_000, seed=34)))
    home = tmp_path_factory.mktemp("observability")
    dags = home / "dags"
    dags.mkdir()
    (dags / DAG_FILE.name).symlink_to(DAG_FILE)
    lineage_file = home / "openlineage.jsonl"
    with StatsdListener() as statsd:
        env = {
            **os.environ,
            "AIRFLOW_HOME": str(home / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__API__BASE_URL": BASE_URL,
            "AIRFLOW__METRICS__STATSD_ON": "True",
            "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
            "AIRFLOW__METRICS__STATSD_PORT": str(statsd.port),
            "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
                {"type": "file", "log_file_path": str(lineage_file), "append": True}
            ),
            "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps(
                {"conn_type": "kafka", "extra": {"bootstrap.servers": bootstrap}}
            ),
            "KAFKASPARK_HOME": str(home / "kafkaspark"),
            "KAFKASPARK_JOB_NAME": "obs",
            "KAFKASPARK_SOURCE_TOPIC": SOURCE,
            "KAFKASPARK_SINK_TOPIC": SINK,
            "KAFKASPARK_TEST_UI_PORT": str(free_port()),
        }
        airflow = str(Path(sys.executable).parent / "airflow")
        subprocess.run(
            [airflow, "db", "migrate"], env=env, check=True, capture_output=True, timeout=300
        )
        started = time.monotonic()
        proc = subprocess.run(
            [airflow, "dags", "test", DAG_ID],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        took = time.monotonic() - started
        time.sleep(1)  # the last datagrams
    checkpoint = f"{env['KAFKASPARK_HOME']}/{JOB}/checkpoint"
    try:
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output[-6000:]
        print(f"observability DAG: {took:.1f} s")
        yield {
            "env": env,
            "output": output,
            "statsd": statsd,
            "lineage": lineage_file,
            "xcom": xcoms(Path(env["AIRFLOW_HOME"]) / "airflow.db"),
            "bootstrap": bootstrap,
            "checkpoint": checkpoint,
        }
    finally:
        stop_job(checkpoint, requested_by="teardown", reason="cleanup", drain_timeout_s=60)


def xcoms(db_file: Path) -> dict[tuple[str, str], Any]:
    """(task id, key) -> value of the DAG's run."""
    with sqlite3.connect(db_file) as db:
        rows = db.execute(
            "SELECT task_id, key, value FROM xcom WHERE dag_id = ?", (DAG_ID,)
        ).fetchall()
    found: dict[tuple[str, str], Any] = {}
    for task_id, key, value in rows:
        # SQLite hands the JSON column back decoded when it is a number.
        text = value.decode() if isinstance(value, bytes) else value
        found[(task_id, key)] = json.loads(text) if isinstance(text, str) else text
    return found


def test_the_operators_metrics_arrive_through_airflows_stats_client(run: dict[str, Any]) -> None:
    statsd: StatsdListener = run["statsd"]
    xcom = run["xcom"]
    print("kafkaspark metrics:", [line for line in statsd.lines if ".kafkaspark." in line])
    # Airflow's own metrics of the same tasks came through the same client.
    assert statsd.values(f"ti.finish.{DAG_ID}.submit.success", "c") == [1.0]
    # Two submits started a driver; the second replaced the first's: one restart.
    assert statsd.values(f"kafkaspark.{JOB}.submits", "c") == [1.0, 1.0]
    assert statsd.values(f"kafkaspark.{JOB}.restarts", "c") == [1.0]
    assert xcom[("replace", "replaced")] is True and xcom[("submit", "replaced")] is False
    # The savepoint of the running job, then the stop's: 1 then 2 complete savepoints, each
    # gauge of bytes the size its task reported.
    assert statsd.values(f"kafkaspark.{JOB}.savepoints", "g") == [1.0, 2.0]
    sizes = [xcom[(task, "savepoint")]["bytes"] for task in ("savepoint", "stop")]
    assert all(size > 0 for size in sizes)
    assert statsd.values(f"kafkaspark.{JOB}.savepoint_bytes", "g") == [float(s) for s in sizes]
    assert statsd.values(f"kafkaspark.{JOB}.stops", "c") == [1.0]


def submit_events(lineage_file: Path, task_id: str) -> dict[str, dict[str, Any]]:
    events = [json.loads(line) for line in lineage_file.read_text().splitlines() if line]
    return {e["eventType"]: e for e in events if e["job"]["name"] == f"{DAG_ID}.{task_id}"}


def test_the_submit_reports_its_topics_to_openlineage(run: dict[str, Any]) -> None:
    events = submit_events(run["lineage"], "submit")
    assert {"START", "COMPLETE"} <= set(events), sorted(events)
    namespace = f"kafka://{run['bootstrap'].split(',')[0]}"
    for event in (events["START"], events["COMPLETE"]):
        assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [(namespace, SOURCE)]
        assert [(d["namespace"], d["name"]) for d in event["outputs"]] == [(namespace, SINK)]
    # The stop runs no code of the job: no datasets.
    stop = submit_events(run["lineage"], "stop")
    assert stop and all(not e["inputs"] and not e["outputs"] for e in stop.values())


def test_the_task_instances_link_to_the_spark_ui_and_the_job_page(run: dict[str, Any]) -> None:
    xcom = run["xcom"]
    port = run["env"]["KAFKASPARK_TEST_UI_PORT"]
    query = "?checkpoint=" + run["checkpoint"].replace("/", "%2F")
    page = f"{BASE_URL}/kafkaspark/jobs/{JOB}{query}"
    ui = f"http://{socket.gethostname()}:{port}"  # the driver's host: this one
    for task in ("submit", "replace"):
        # The driver's UI on the spec's fixed port (Spark's own UI: it answered, below).
        assert xcom[(task, "_link_SparkUiLink")] == ui
        assert xcom[(task, "_link_YarnApplicationLink")] == ""  # a local driver
        assert xcom[(task, "_link_StreamingJobLink")] == page
    for look in ("look_first", "look_again"):
        assert xcom[(look, "return_value")] == {"url": ui, "status": 200}
    # The stopped driver's UI is gone with it; the job's page stays.
    assert xcom[("stop", "_link_SparkUiLink")] == ""
    assert xcom[("stop", "_link_StreamingJobLink")] == page
