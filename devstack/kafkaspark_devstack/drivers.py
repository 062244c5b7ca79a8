"""Real local drivers, driven the way tests, the reliability harness, benchmarks and the demo
need: submitted through the lifecycle, waited for, signalled, killed, their logs read.
Production code starts and kills drivers through `backends/` and never needs these.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.backends.local import LocalBackend
from airflow_provider_kafkaspark.backends.local_driver import LocalJobHandle, started_child
from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec


def submit_local(
    spec: JobSpec,
    workdir: str,
    *,
    master: str,
    restart_policy: RestartPolicy | None,
    submitted_by: str = "kafkaspark",
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """`lifecycle/submit.submit_job` with a driver process on this host (local or client mode)."""
    from airflow_provider_kafkaspark.backends import deployment_backend
    from airflow_provider_kafkaspark.backends.base import SubmitOptions
    from airflow_provider_kafkaspark.lifecycle.submit import submit_job

    backend = deployment_backend(master)
    options = SubmitOptions(
        workdir=workdir, submitted_by=submitted_by, restart_policy=restart_policy, env=env or {}
    )
    return submit_job(backend, spec, options)


def wait_exit(handle: LocalJobHandle, timeout_s: float) -> int | None:
    """The exit code, or None if still running after `timeout_s`. Exit codes of drivers
    that are not our children are unknown: -1 once they are gone."""
    proc: subprocess.Popen[bytes] | None = started_child(handle.pid)
    if proc is not None:
        try:
            return proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None
    deadline = time.monotonic() + timeout_s
    while handle.is_alive():
        if time.monotonic() > deadline:
            return None
        time.sleep(0.2)
    return -1


def signal_driver(handle: LocalJobHandle, sig: signal.Signals = signal.SIGTERM) -> None:
    """SIGTERM goes to the Python driver only: the driver drains and stops the JVM itself."""
    os.kill(handle.pid, sig)


def kill_driver(handle: LocalJobHandle) -> None:
    """SIGKILL the driver's whole process group (Python, JVM, workers), as a crash would:
    the local backend's own kill."""
    LocalBackend(handle.master).force_kill(handle.to_ref())
    wait_exit(handle, 30)


def read_log(handle: LocalJobHandle, tail: int = 60) -> str:
    try:
        lines = Path(handle.log_file).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-tail:])
