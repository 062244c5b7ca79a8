"""A YARN submit from the CLI finds spark-submit where a person has it, and says in one line
what to do when it cannot, instead of the official hook's traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from airflow_provider_kafkaspark.commands.spark_submit import _pyspark_home, find_spark_submit
from tests.integration.cli_util import cli

YARN = {"conn_type": "spark", "host": "yarn"}
NO_RM = {"deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": "http://127.0.0.1:9"}


def submit_with(tmp_path: Path, extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    spec = {
        "job_name": "needs_spark_submit",
        "source": {"bootstrap_servers": "127.0.0.1:9", "subscribe": ["t"]},
        "sql": "SELECT value FROM source",
        "sink": {"kind": "console"},
        "checkpoint_location": str(tmp_path / "checkpoint"),
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if k != "SPARK_HOME"}
    env["PATH"] = "/usr/bin:/bin"  # not this environment's bin, where pyspark put spark-submit
    env["AIRFLOW_CONN_SPARK_CLI"] = json.dumps({**YARN, "extra": {**NO_RM, **extra}})
    return cli(
        "job", "submit", str(tmp_path / "spec.json"), "--spark-conn-id", "spark_cli",
        "--no-probe", timeout=120, env=env,
    )  # fmt: skip


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkaspark: error: "), proc.stderr[-3000:]
    return lines[0]


def test_no_spark_submit_anywhere_is_one_line_saying_what_to_do(tmp_path: Path) -> None:
    # pyspark ships no spark3-submit: PATH, this environment and pyspark's folder lack it.
    line = one_line(submit_with(tmp_path, {"spark-binary": "spark3-submit"}))
    assert "spark3-submit not found (looked on PATH" in line
    assert "--spark-home" in line and "SPARK_HOME" in line


def test_a_connections_spark_home_extra_is_one_line(tmp_path: Path) -> None:
    line = one_line(submit_with(tmp_path, {"spark-home": "/opt/spark"}))
    assert "spark connection 'spark_cli': the official Spark provider refuses" in line
    assert "--spark-home" in line


def test_the_environments_own_spark_submit_runs(tmp_path: Path) -> None:
    found = find_spark_submit(
        "spark-submit",
        spark_home_flag=None,
        spark_home_env=None,
        path_env=str(tmp_path),
        python_bin=tmp_path,
        pyspark_home=_pyspark_home(),
    )
    assert found.source == "the installed pyspark"
    env = {k: v for k, v in os.environ.items() if k != "SPARK_HOME"}
    version = subprocess.run(
        [str(found.path), "--version"], capture_output=True, text=True, timeout=120, env=env
    )
    import pyspark

    assert version.returncode == 0, version.stderr[-2000:]
    assert f"version {pyspark.__version__}" in version.stdout + version.stderr
    assert Path(sys.executable).parent != found.path.parent
