"""A driver as a deployment runs it: the wheel built from the tree, installed into an empty
virtualenv with pyspark and the `driver` extra (this package --no-deps: a driver never imports
Airflow), run as `python -m ...spark.runner --master local[2]` with its jars from the
explicit setting (`KAFKASPARK_JARS_DIR`) and nothing pointing at the source tree.

A real broker (the dev stack's, from the test environment), the exactly-once sink, a stop
through the control folder; and the same driver with the setting naming an empty folder
ends at once with the typed error naming the setting and the missing artifact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.control.folder import ControlFolder, request_stop
from airflow_provider_kafkaspark.spark.jars import JARS_DIR_ENV, jar_file_name
from airflow_provider_kafkaspark.versions import SPARK_VERSION, spark_line
from kafkaspark_devstack.jars import default_jars_dir
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, produce_numbered, read_all_values
from tests.integration.runtime_util import committed_batches
from tests.integration.wheel_util import ROOT, build_wheel, extra_requirements

pytestmark = pytest.mark.integration

RECORDS = 200
# Bounds for a slow or stuck machine, not the time anything is expected to take.
INSTALL_TIMEOUT_S = 300
FIRST_RECORDS_TIMEOUT_S = 180
STOP_TIMEOUT_S = 120
BAD_SETTING_TIMEOUT_S = 60

CHECK_ISOLATION = """
import importlib.util, json, sys
import airflow_provider_kafkaspark
print(json.dumps({
    "package": airflow_provider_kafkaspark.__file__,
    "devstack": importlib.util.find_spec("kafkaspark_devstack") is not None,
    "airflow": importlib.util.find_spec("airflow") is not None,
    "prefix": sys.prefix,
}))
"""


@dataclass(frozen=True)
class DriverVenv:
    python: Path
    install_s: float


@pytest.fixture(scope="module")
def driver_venv(tmp_path_factory: pytest.TempPathFactory) -> DriverVenv:
    """An empty virtualenv (no system site packages, no pip of its own: this environment's
    pip installs into it) with pyspark, the driver extra and the wheel."""
    base = tmp_path_factory.mktemp("wheel-driver")
    wheel = build_wheel(base)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # Plain pyspark: the driver extra alone must bring what the exactly-once sink needs
    # (pyarrow and pandas for its Arrow batches).
    # --no-compile: nobody reads the .pyc files of pyspark's 400 MB before the driver runs.
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile"]
    started = time.monotonic()
    for args in (
        [f"pyspark=={SPARK_VERSION}", *extra_requirements(wheel, "driver")],
        ["--no-deps", str(wheel)],
    ):
        subprocess.run(
            [*pip, *args], check=True, capture_output=True, timeout=INSTALL_TIMEOUT_S, cwd=base
        )
    install_s = time.monotonic() - started
    print(f"driver venv: installed in {install_s:.1f}s")
    return DriverVenv(python, install_s)


def driver_env(jars_dir: Path) -> dict[str, str]:
    """What a deployment's driver gets: PATH without any virtualenv's bin, HOME, Java, the
    jar setting; no PYTHONPATH, nothing naming the source tree (but the jar folder, which the
    dev stack keeps under it)."""
    path = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if ".venv" not in p and str(ROOT) not in p
    )
    env = {"PATH": path, JARS_DIR_ENV: str(jars_dir)}
    for name in ("HOME", "JAVA_HOME", "LANG", "TMPDIR", "KAFKASPARK_FAST_JVM"):
        if name in os.environ:
            env[name] = os.environ[name]
    named_tree = [k for k, v in env.items() if str(ROOT) in v and k != JARS_DIR_ENV]
    assert named_tree == [], f"{named_tree} name the source tree"
    return env


def write_spec(tmp_path: Path, bootstrap: str, source: str, sink: str) -> Path:
    spec = {
        "job_name": "wheel-driver",
        "source": {
            "bootstrap_servers": bootstrap,
            "subscribe": [source],
            "starting_offsets": "earliest",
            "max_offsets_per_trigger": 100,
        },
        "transformation": "airflow_provider_kafkaspark.examples.passthrough:transform",
        "sink": {"kind": "kafka_exactly_once", "topic": sink},
        "checkpoint_location": str(tmp_path / "checkpoint"),
        "trigger_interval": "1 second",
    }
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def start_runner(
    venv: DriverVenv, spec: Path, env: dict[str, str], log: Path
) -> subprocess.Popen[bytes]:
    command = [str(venv.python), "-m", "airflow_provider_kafkaspark.spark.runner"]
    with log.open("wb") as out:
        return subprocess.Popen(
            [*command, "--spec", str(spec), "--master", "local[2]"],
            cwd=spec.parent,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def tail(log: Path, lines: int = 60) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def test_the_installed_driver_has_neither_airflow_nor_the_dev_stack(
    driver_venv: DriverVenv, tmp_path: Path
) -> None:
    out = subprocess.run(
        [str(driver_venv.python), "-c", CHECK_ISOLATION],
        env=driver_env(default_jars_dir()),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    found = json.loads(out)
    assert found["prefix"] == str(driver_venv.python.parent.parent)
    assert found["package"].startswith(found["prefix"]), found  # the wheel, not the tree
    assert not found["devstack"] and not found["airflow"], found


def test_the_installed_driver_runs_with_jars_from_the_setting(
    driver_venv: DriverVenv, kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    runner_log = tmp_path / "driver.log"
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, "wheel_driver_in", 2)
    create_topic(bootstrap, "wheel_driver_out", 2)
    produce_numbered(bootstrap, "wheel_driver_in", RECORDS)
    spec = write_spec(tmp_path, bootstrap, "wheel_driver_in", "wheel_driver_out")
    checkpoint = str(tmp_path / "checkpoint")
    driver = start_runner(driver_venv, spec, driver_env(default_jars_dir()), runner_log)
    try:
        started = time.monotonic()
        seen: list[str] = []
        while len(seen) < RECORDS:
            code = driver.poll()
            assert code is None, f"driver exited with {code}:\n{tail(runner_log)}"
            waited = time.monotonic() - started
            assert waited < FIRST_RECORDS_TIMEOUT_S, (
                f"gave up after {waited:.0f}s: {len(seen)} of {RECORDS} records in the sink "
                f"topic, last committed batch {committed_batches(checkpoint)}\n{tail(runner_log)}"
            )
            time.sleep(1)
            seen = read_all_values(bootstrap, "wheel_driver_out", 2, timeout=30)
        print(f"wheel driver: {RECORDS} records through in {time.monotonic() - started:.1f}s")
        assert sorted(seen, key=int) == [str(i) for i in range(RECORDS)]
        assert committed_batches(checkpoint) >= 0

        request_stop(checkpoint, requested_by="test_wheel_driver")
        try:
            code = driver.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"driver still running {STOP_TIMEOUT_S}s after the stop request:\n"
                f"{tail(runner_log)}"
            ) from None
        assert code == 0, tail(runner_log)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(30)


def test_a_jar_setting_without_the_connector_is_a_typed_error(
    driver_venv: DriverVenv, kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    runner_log = tmp_path / "driver.log"
    empty = tmp_path / "no-jars"
    empty.mkdir()
    spec = write_spec(tmp_path, kafka_cluster.bootstrap_servers, "wheel_no_jars", "unused")
    started = time.monotonic()
    driver = start_runner(driver_venv, spec, driver_env(empty), runner_log)
    try:
        code = driver.wait(BAD_SETTING_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        driver.kill()
        driver.wait(30)
        raise AssertionError(
            f"driver still running {BAD_SETTING_TIMEOUT_S}s with no jars:\n{tail(runner_log)}"
        ) from None
    took = time.monotonic() - started
    log = runner_log.read_text(errors="replace")
    # A bad job (exit 4, which no supervisor restarts), not a crash to retry (exit 1).
    assert code == 4, log
    first = spark_line(SPARK_VERSION).connector_artifacts()[0]
    (error,) = [line for line in log.splitlines() if " ERROR kafkaspark.runner: " in line]
    assert f"{JARS_DIR_ENV}={empty}" in error and jar_file_name(first) in error, error
    assert first in error, error
    assert "Traceback" not in log, log
    stopped = ControlFolder(str(tmp_path / "checkpoint")).read_stopped()
    assert stopped is not None and stopped.exit_code == 4 and stopped.reason == "bad job"
    assert f"{JARS_DIR_ENV}={empty}" in stopped.message and first in stopped.message
    print(f"wheel driver without jars: exit {code} after {took:.1f}s")
