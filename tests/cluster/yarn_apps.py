"""Tiny PySpark applications submitted to the local YARN cluster in cluster deploy mode."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kafkaspark_devstack.yarn import LocalYarnCluster

T = TypeVar("T")

APP = """\
import sys, time
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
total = spark.range(1000).selectExpr("sum(id) as s").collect()[0]["s"]
open(sys.argv[1], "a").write(f"{total}\\n")
time.sleep(float(sys.argv[2]))
spark.stop()
"""


def submit(
    cluster: LocalYarnCluster, workdir: Path, name: str, out: Path, linger_s: float, attempts: int
) -> str:
    """spark-submit the app (not waiting for it); returns its YARN application id."""
    import pyspark

    home = Path(pyspark.__file__).parent
    workdir.mkdir(parents=True, exist_ok=True)
    app = workdir / "app.py"
    app.write_text(APP)
    lib = home / "python" / "lib"
    py4j = next(lib.glob("py4j-*-src.zip"))
    env = {
        **os.environ,
        **cluster.client_environment(),
        "SPARK_HOME": str(home),
        # pyspark's own archives, used in place (local:) rather than uploaded each submit.
        "PYSPARK_ARCHIVES_PATH": f"local:{lib / 'pyspark.zip'},local:{py4j}",
    }
    conf = {
        "spark.yarn.jars": f"local:{home / 'jars'}/*",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.yarn.stagingDir": f"file://{workdir / 'staging'}",
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
        "spark.executor.instances": "1",
        "spark.yarn.maxAppAttempts": str(attempts),
        "spark.yarn.submit.waitAppCompletion": "false",
    }
    command = [str(home / "bin" / "spark-submit"), "--master", "yarn"]
    command += ["--deploy-mode", "cluster", "--name", name]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    command += [str(app), str(out), str(linger_s)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    found = re.findall(r"application_\d+_\d+", output)
    if done.returncode != 0 or not found:
        raise RuntimeError(f"spark-submit failed ({done.returncode}):\n{output[-4000:]}")
    return str(found[-1])


def wait(what: str, probe: Callable[[], T], done: Callable[[T], bool], timeout_s: float) -> T:
    deadline = time.monotonic() + timeout_s
    seen = probe()
    while not done(seen):
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout_s:g}s waiting for {what}; last: {seen}")
        time.sleep(1)
        seen = probe()
    return seen


def use_yarn_worker(
    monkeypatch: pytest.MonkeyPatch, yarn: LocalYarnCluster, connections: dict[str, Any]
) -> None:
    """This process as an Airflow worker that submits to `yarn`: the given connections (name
    -> JSON form), spark-submit on PATH, the cluster's client configuration, and no AWS
    variables (the driver must get its storage credentials from the `aws` connection)."""
    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    for name, value in connections.items():
        monkeypatch.setenv(f"AIRFLOW_CONN_{name.upper()}", json.dumps(value))
    for key, setting in yarn.client_environment().items():
        monkeypatch.setenv(key, setting)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
