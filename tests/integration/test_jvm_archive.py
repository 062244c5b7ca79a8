"""The class archives `make setup` builds are the ones a local driver and broker map: started
with -Xshare:on, a JVM refuses to start rather than run without its archive."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.spark.fast_jvm import FAST_JVM_ENV
from kafkaspark_devstack.jvm_archive import archive_is_current, archive_path
from kafkaspark_devstack.kafka import LocalKafkaCluster

DRIVER = """
import sys
from airflow_provider_kafkaspark.spark.local_session import local_spark_session
session = local_spark_session("archive-check", conf={"spark.driver.extraJavaOptions": sys.argv[1]})
print("rows", session.range(10).count())
session.stop()
"""


def run_driver(java_options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", DRIVER, java_options],
        env={**os.environ, FAST_JVM_ENV: "1"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_a_local_driver_maps_the_spark_archive() -> None:
    assert archive_is_current("spark"), f"{archive_path('spark')} missing or stale: make setup"
    mapped = run_driver("-Xshare:on")
    assert mapped.returncode == 0 and "rows 10" in mapped.stdout, mapped.stderr[-3000:]
    # The check can fail: the broker's archive does not fit a driver's classes.
    wrong = run_driver(f"-Xshare:on -XX:SharedArchiveFile={archive_path('kafka')}")
    assert wrong.returncode != 0 and "rows 10" not in wrong.stdout


def test_a_local_broker_maps_the_kafka_archive(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert archive_is_current("kafka"), f"{archive_path('kafka')} missing or stale: make setup"
    monkeypatch.setenv(FAST_JVM_ENV, "1")
    with LocalKafkaCluster(tmp_path / "kafka", broker_jvm_options=["-Xshare:on"]) as cluster:
        assert cluster.status()["nodes"][0]["running"]
        command = Path(f"/proc/{cluster.node(1).pid}/cmdline").read_bytes().split(b"\0")
        assert f"-XX:SharedArchiveFile={archive_path('kafka')}".encode() in command
