"""Starting the job runner as a local process (Spark local mode or client mode), detached
from the caller, and asking it to stop through the control folder.

The Airflow submit operator uses this for local/client mode; tests and the demo use it to
run real drivers that can be stopped, signalled or killed like production ones.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.core.control import ControlFolder, StopRequest, now_ms
from airflow_provider_kafkaspark.core.job_code import driver_python_path
from airflow_provider_kafkaspark.core.job_ref import LocalJobRef
from airflow_provider_kafkaspark.core.jobspec import JobSpec
from airflow_provider_kafkaspark.core.private_file import write_private
from airflow_provider_kafkaspark.core.restart import RestartPolicy
from airflow_provider_kafkaspark.local.process import pid_alive
from airflow_provider_kafkaspark.local.spark import driver_python, python_env


@dataclass(frozen=True)
class LocalJobHandle:
    """Where a locally started driver runs and how to reach it (small, JSON-serializable)."""

    job_name: str
    pid: int
    log_file: str
    spec_file: str
    checkpoint: str
    master: str
    started_at_ms: int
    # The driver's working folder (Spark leaves artifacts/, spark-warehouse/ there).
    work_dir: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> LocalJobHandle:
        return cls(**raw)

    @classmethod
    def from_submit_handle(cls, handle: dict[str, Any]) -> LocalJobHandle:
        """The local driver a submit's handle (`lifecycle.submit_job`) names; the handle's
        other keys (job_ref, since_batch, ...) are not part of it."""
        return cls.from_dict({k: v for k, v in handle.items() if k in cls.__dataclass_fields__})

    def is_alive(self) -> bool:
        return pid_alive(self.pid)

    def to_ref(self) -> LocalJobRef:
        """The job reference of this driver (what the lifecycle's stop calls take)."""
        import socket

        return LocalJobRef(
            self.job_name,
            self.checkpoint,
            socket.gethostname(),
            self.pid,
            self.log_file,
            self.master,
        )


def spec_file_path(spec: JobSpec, workdir: str | os.PathLike[str]) -> Path:
    """Where a driver's spec file goes in `workdir` (created); its log and working folder
    are named after it."""
    folder = Path(workdir)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{spec.job_name}-{time.strftime('%Y%m%dT%H%M%S')}.spec.json"


def write_spec_file(spec: JobSpec, workdir: str | os.PathLike[str]) -> Path:
    """The spec as a file only its owner can read (it may hold client secrets)."""
    return write_private(spec_file_path(spec, workdir), spec.to_json())


# Airflow's connections and variables given as environment variables hold secrets (a
# connection's password): the driver gets what it needs in its spec file, not these.
_SECRET_ENV_PREFIXES = ("AIRFLOW_CONN_", "AIRFLOW_VAR_")


def driver_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without Airflow's connections and variables."""
    source = dict(os.environ if environ is None else environ)
    return {k: v for k, v in source.items() if not k.upper().startswith(_SECRET_ENV_PREFIXES)}


def start_local_job(
    spec: JobSpec,
    workdir: str | os.PathLike[str],
    *,
    master: str = "local[2]",
    env: dict[str, str] | None = None,
    restart_policy: RestartPolicy | None = None,
) -> LocalJobHandle:
    """Write the spec (it may hold client secrets: mode 0600) and start the runner in a new
    session, so it outlives the caller and can be signalled as a group. With a restart
    policy, a supervisor process starts (and restarts) the runner.

    The driver runs in a folder of its own next to its log, not in the caller's (an Airflow
    worker's) working folder; relative local paths in the spec are made absolute first. The
    spec's `python_path` entries are shipped into that folder, as to a cluster's container:
    the driver (and a restart of it) reads them there, not where the caller had them."""
    from airflow_provider_kafkaspark.backends.package_archive import ship_python_path

    caller_dir = os.getcwd()
    spec = spec.with_local_paths_absolute(caller_dir)
    spec_file = spec_file_path(spec, Path(caller_dir, workdir))
    log_file = spec_file.with_name(spec_file.name.replace(".spec.json", ".log"))
    work_dir = spec_file.with_name(spec_file.name.replace(".spec.json", ".work"))
    work_dir.mkdir(exist_ok=True)
    spec, _ = ship_python_path(spec, work_dir)
    write_private(spec_file, spec.to_json())
    python = driver_python(spec.spark_conf)
    child_env = {**driver_environment(), **python_env(master, python), **(env or {})}
    python_path = driver_python_path(
        spec, _absolute_entries(child_env.get("PYTHONPATH"), caller_dir), str(work_dir)
    )
    if python_path:
        # The driver, its JVM and the Python workers it forks all inherit it.
        child_env["PYTHONPATH"] = python_path
    with open(log_file, "ab") as log:
        command = [python, "-m", "airflow_provider_kafkaspark.spark.runner"]
        if restart_policy is not None:
            # The supervisor runs the runner with its own interpreter: the driver's.
            command = [
                python,
                "-m",
                "airflow_provider_kafkaspark.local.supervisor",
                "--policy",
                json.dumps(restart_policy.to_dict()),
            ]
        proc = subprocess.Popen(
            [*command, "--spec", str(spec_file), "--master", master],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=child_env,
            cwd=work_dir,
            start_new_session=True,
        )
    _children[proc.pid] = proc
    return LocalJobHandle(
        job_name=spec.job_name,
        pid=proc.pid,
        log_file=str(log_file),
        spec_file=str(spec_file),
        checkpoint=spec.checkpoint_location,
        master=master,
        started_at_ms=now_ms(),
        work_dir=str(work_dir),
    )


def _absolute_entries(search_path: str | None, base_dir: str) -> str | None:
    """A PYTHONPATH with relative entries made absolute: the driver runs in another folder."""
    if not search_path:
        return search_path
    entries = search_path.split(os.pathsep)
    return os.pathsep.join(os.path.join(base_dir, e) if e else base_dir for e in entries)


# Our own children, so that waiting reaps them (no zombies answering kill(0)).
_children: dict[int, subprocess.Popen[bytes]] = {}


def wait_exit(handle: LocalJobHandle, timeout_s: float) -> int | None:
    """The exit code, or None if still running after `timeout_s`. Exit codes of drivers
    that are not our children are unknown: -1 once they are gone."""
    proc = _children.get(handle.pid)
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


def request_stop(
    checkpoint: str,
    *,
    requested_by: str = "kafkaspark",
    reason: str = "requested",
    drain_timeout_s: float = 120.0,
    at_batch_boundary: bool = False,
) -> StopRequest:
    request = StopRequest(now_ms(), requested_by, reason, drain_timeout_s, at_batch_boundary)
    ControlFolder(checkpoint).request_stop(request)
    return request


def signal_driver(handle: LocalJobHandle, sig: signal.Signals = signal.SIGTERM) -> None:
    """SIGTERM goes to the Python driver only: the driver drains and stops the JVM itself."""
    os.kill(handle.pid, sig)


def kill_driver(handle: LocalJobHandle) -> None:
    """SIGKILL the driver's whole process group (Python, JVM, workers), as a crash would."""
    try:
        os.killpg(handle.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    wait_exit(handle, 30)


def read_log(handle: LocalJobHandle, tail: int = 60) -> str:
    try:
        lines = Path(handle.log_file).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-tail:])
