"""Beyond one JVM: the example job submitted in client mode to a Spark standalone cluster
(a master and a worker started here with `spark-class`) runs its executors on the worker,
commits batches, and writes exactly once."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.backends.local_driver import start_local_job
from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from airflow_provider_kafkaspark.core.control.folder import request_stop
from airflow_provider_kafkaspark.core.health.observe import caught_up, end_offsets
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.examples.access_events import (
    AccessEvent,
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.examples.ip_count import (
    expected_counts,
    job_spec_dict,
    sink_windows,
)
from kafkaspark_devstack.drivers import read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, read_all_values


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_line(path: Path, text: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in (path.read_text(errors="replace") if path.exists() else ""):
        assert proc.poll() is None, f"{path.name} exited:\n{path.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no '{text}' in {path}"
        time.sleep(0.5)


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    venv_bin = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    spark_class = str(venv_bin / "spark-class")
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    work = tmp_path / "worker-work"
    procs = []
    try:
        master_log = tmp_path / "master.log"
        with open(master_log, "wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        spark_class,
                        "org.apache.spark.deploy.master.Master",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        "--webui-port",
                        str(free_port()),
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            )
        wait_for_line(master_log, "Starting Spark master", procs[0], 120)
        worker_log = tmp_path / "worker.log"
        with open(worker_log, "wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        master_url,
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        "2",
                        "--memory",
                        "2g",
                        "--webui-port",
                        str(free_port()),
                        "--work-dir",
                        str(work),
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            )
        wait_for_line(worker_log, "Successfully registered with master", procs[1], 120)
        yield master_url, work
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(30)


def test_client_mode_on_a_standalone_cluster(
    kafka_cluster: LocalKafkaCluster, standalone: tuple[str, Path], tmp_path: Path
) -> None:
    master_url, work = standalone
    bootstrap = kafka_cluster.bootstrap_servers
    source, sink = "standalone_source", "standalone_sink"
    create_topic(bootstrap, source, 3)
    create_topic(bootstrap, sink, 3)
    events = list(generate_events(3_000, seed=21))
    flush_ms = max(e.event_time_ms for e in events) + 60_000
    produce_events(bootstrap, source, [*events, AccessEvent("255.255.255.255", flush_ms, "/", 200)])
    checkpoint = str(tmp_path / "checkpoint")
    raw = job_spec_dict(
        bootstrap_servers=bootstrap,
        checkpoint=checkpoint,
        job_name="standalone",
        source_topic=source,
        sink_topic=sink,
        trigger_interval="1 second",
        max_offsets_per_trigger=1_000,
    )
    # What the job's author sizes for a cluster (no local-mode defaults apply off local[...]):
    # few shuffle partitions for this small job, and a driver address the worker reaches (the
    # cluster here is on loopback).
    raw["spark_conf"] = {"spark.sql.shuffle.partitions": "2", "spark.driver.host": "127.0.0.1"}
    spec = JobSpec.from_dict(raw)
    driver = start_local_job(
        spec, tmp_path / "driver", master=master_url, env={"SPARK_LOCAL_IP": "127.0.0.1"}
    )
    kafka = KafkaFacade({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 300
    while True:
        assert pid_alive(driver.pid), read_log(driver)
        assert time.monotonic() < deadline, read_log(driver)
        try:
            if caught_up(CheckpointReader(checkpoint).position(), end_offsets(kafka, [source])):
                break
        except Exception:  # noqa: BLE001 - not written yet
            pass
        time.sleep(1)
    request_stop(checkpoint, requested_by="test")
    assert wait_exit(driver, 180) == 0, read_log(driver)

    # The executors ran on the worker: it made an application folder with executor dirs.
    apps = [p for p in work.iterdir() if p.name.startswith("app-")]
    assert len(apps) == 1 and any(apps[0].iterdir())

    counts, duplicates = sink_windows(read_all_values(bootstrap, sink, 3))
    assert duplicates == 0
    assert counts == expected_counts(events, closed_before_ms=flush_ms - 10_000)
