"""The README's path for running DAGs on the local stack ("Quick start", the block after
"Against the local stack"), run line by line as a reader would: from a folder that looks like
the checkout after `make setup`, with none of the settings the dev stack or the test session
make for themselves (issue 44: `KAFKASPARK_JARS_DIR`, which only the dev stack's commands
set, left a reader's own DAGs crash-looping). The deploy DAG must reach a healthy job."""

from __future__ import annotations

import os
import re
import socket
import subprocess
from pathlib import Path

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.deploy.deployment import DeploymentStatus
from airflow_provider_kafkaspark.core.deploy.record_file import DeploymentFile

ROOT = Path(__file__).resolve().parents[2]
MARKER = "Against the local stack"
# What the block needs of the checkout (`make setup` made the last two).
CHECKOUT_PARTS = ("dags", ".venv", ".cache")
# Variables a reader's shell does not have: the test session's and the dev stack's own.
NOT_A_READERS = re.compile(r"^(AIRFLOW|KAFKASPARK|PYSPARK|SPARK|PYTHONPATH|JAVA_TOOL)")


def readme_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index(MARKER)
    block = re.search(r"```bash\n(.*?)```", text[start:], re.DOTALL)
    assert block is not None, f"README.md: no bash block after {MARKER!r}"
    return [line for line in block.group(1).splitlines() if line.strip()]


def reader_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not NOT_A_READERS.match(k)}


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def test_the_readme_block_names_the_settings_a_reader_needs() -> None:
    block = "\n".join(readme_block())
    assert "KAFKASPARK_JARS_DIR=" in block
    assert "--topic ip_count_source" in block and "--topic ip_count_sink" in block
    assert block.splitlines()[-1].endswith("local kafka stop")  # leaves nothing running


def test_the_readme_local_path_runs_the_deploy_dag_to_a_healthy_job(tmp_path: Path) -> None:
    lines = readme_block()
    assert port_free(9092), "the README's Kafka listens on 9092: something else does here"
    for part in CHECKOUT_PARTS:
        (tmp_path / part).symlink_to(ROOT / part)
    script = "set -euo pipefail\n" + "\n".join(lines) + "\n"
    jobs = tmp_path / ".local" / "jobs"
    checkpoint = str(jobs / "ip_count" / "checkpoint")
    try:
        proc = subprocess.run(
            ["bash", "-c", script],
            cwd=tmp_path,
            env=reader_environment(),
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    finally:
        # Whatever happened: the broker the block started goes (the block's last line).
        if (tmp_path / ".local" / "kafka").is_dir():
            subprocess.run(
                [str(ROOT / ".venv/bin/kafkaspark"), "local", "kafka", "stop"],
                cwd=tmp_path,
                env=reader_environment(),
                capture_output=True,
                timeout=120,
                check=False,
            )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-8000:]
    assert "deploy of ip_count: submit" in output, output[-4000:]
    record = DeploymentFile(checkpoint).read()
    assert record is not None, output[-4000:]
    assert DeploymentStatus.STABLE in {t.status for t in record.history}, record.to_dict()
    stopped = ControlFolder(checkpoint).read_stopped()
    assert stopped is not None and stopped.exit_code == 0 and stopped.clean, stopped
    assert stopped.last_committed_batch is not None
    assert port_free(9092)
