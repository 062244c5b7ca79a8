"""Missing Java, missing jars and a busy port each end in one clear error line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

KAFKASPARK = str(Path(sys.executable).parent / "kafkaspark")


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KAFKASPARK, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def single_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("kafkaspark: error: ")
    return lines[0]


def test_missing_java_names_java_home(tmp_path: Path) -> None:
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-jdk")}
    line = single_error_line(run_cli("local", "kafka", "start", "--dir", str(tmp_path), env=env))
    assert "Java not found" in line and str(tmp_path / "no-jdk") in line
    assert not (tmp_path / "cluster.json").exists()


def test_java_absent_from_path(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # an empty folder: no java
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_provider_kafkaspark.cli",
            "local",
            "kafka",
            "start",
            "--dir",
            str(tmp_path / "k"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    line = single_error_line(proc)
    assert "no `java` on PATH" in line


def test_missing_jars_names_the_folder(tmp_path: Path) -> None:
    env = {**os.environ, "KAFKASPARK_JARS_DIR": str(tmp_path / "jars")}
    line = single_error_line(run_cli("local", "kafka", "start", "--dir", str(tmp_path), env=env))
    assert str(tmp_path / "jars" / "kafka") in line and "make setup" in line


def test_busy_port_names_the_port(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        line = single_error_line(
            run_cli(
                "local",
                "kafka",
                "start",
                "--dir",
                str(tmp_path),
                "--port",
                str(port),
                env=dict(os.environ),
            )
        )
    assert f"port {port}" in line and "already in use" in line
    assert not (tmp_path / "cluster.json").exists()
