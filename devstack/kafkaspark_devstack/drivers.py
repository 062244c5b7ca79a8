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

from airflow_provider_kafkaspark.backends import backend_for
from airflow_provider_kafkaspark.backends.local_driver import started_child
from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from airflow_provider_kafkaspark.core.cluster.job_ref import (
    LocalJobRef,
    job_ref_from_dict,
)
from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from kafkaspark_devstack.process import command_lines, program_of


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


def driver_ref(handle: dict[str, Any]) -> LocalJobRef:
    """The reference of the local driver a submit's handle names (its `job_ref`)."""
    ref = job_ref_from_dict(handle["job_ref"], "submit handle.job_ref")
    if not isinstance(ref, LocalJobRef):
        raise TypeError(f"not a driver of this host: {ref.backend} reference {ref}")
    return ref


def wait_exit(ref: LocalJobRef, timeout_s: float) -> int | None:
    """The exit code, or None if still running after `timeout_s`. Exit codes of drivers
    that are not our children are unknown: -1 once they are gone."""
    proc: subprocess.Popen[bytes] | None = started_child(ref.pid)
    if proc is not None:
        try:
            return proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None
    deadline = time.monotonic() + timeout_s
    while pid_alive(ref.pid):
        if time.monotonic() > deadline:
            return None
        time.sleep(0.2)
    return -1


def signal_driver(ref: LocalJobRef, sig: signal.Signals = signal.SIGTERM) -> None:
    """SIGTERM goes to the Python driver only: the driver drains and stops the JVM itself."""
    os.kill(ref.pid, sig)


def kill_driver(ref: LocalJobRef) -> None:
    """SIGKILL the driver's whole process group (Python, JVM, workers), as a crash would:
    the local backend's own kill."""
    backend_for(ref).force_kill(ref)
    wait_exit(ref, 30)


def read_log(ref: LocalJobRef, tail: int = 60) -> str:
    try:
        lines = Path(ref.log_file).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-tail:])


_RUNNER = b"airflow_provider_kafkaspark.spark.runner"


def pod_driver_pids() -> list[int]:
    """The runners' Pythons of driver pods on this host (a node's pods are its processes):
    their command names the spec a Kubernetes submit mounts, and tini in front of each, with
    the same arguments, is left out."""
    return [
        pid
        for pid, command in command_lines()
        if program_of(command).startswith(b"python")
        and _RUNNER in command
        and b"/opt/kafkaspark/" in command
    ]
