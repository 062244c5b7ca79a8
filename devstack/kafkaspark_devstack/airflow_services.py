"""Airflow 3's own services as long-running processes on one host of the test bed: the
api-server, scheduler, dag-processor, triggerer, and Edge workers (the `edge3` provider's
executor: workers on other hosts that fetch their tasks from the api-server over HTTP).

Each component runs detached with `AIRFLOW_HOME=<base_dir>/<component>` and its log there;
its pid is kept in `<component>.json` for `stop` and `status`. A start waits until the
component is ready the way Airflow's Helm chart probes it: the api-server's health endpoint,
`airflow jobs check --local` for the scheduler, dag-processor and triggerer, and
`airflow edge status` for an Edge worker.

Settings that every host must share (the metadata database, the keys that sign and check
tokens between components, the api-server's address) come from `shared_environment`;
the caller passes them in the environment of every start.
"""

from __future__ import annotations

import base64
import logging
import os
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.errors import LocalStackError
from kafkaspark_devstack.daemon import (
    load_state,
    log_tail,
    save_state,
    spawn,
    stop_group,
    wait_ready,
)
from kafkaspark_devstack.process import server_running

log = logging.getLogger(__name__)

STATE_FILE = "component.json"
API_PORT = 8080
EDGE_EXECUTOR = "airflow.providers.edge3.executors.EdgeExecutor"
EDGE_DB_MANAGER = "airflow.providers.edge3.models.db.EdgeDBManager"
COMPONENTS: dict[str, tuple[str, ...]] = {
    "api-server": ("api-server",),
    "scheduler": ("scheduler",),
    "dag-processor": ("dag-processor",),
    "triggerer": ("triggerer",),
    "edge-worker": ("edge", "worker"),
}
# What `airflow jobs check` calls each component's job (the Helm chart's liveness probes).
_JOB_TYPES = {
    "scheduler": "SchedulerJob",
    "dag-processor": "DagProcessorJob",
    "triggerer": "TriggererJob",
}


class AirflowServiceError(LocalStackError):
    """An Airflow component exited during its start or did not become ready in time."""


def new_shared_secrets() -> dict[str, str]:
    """The three keys that must be equal on every host: connections and variables are
    encrypted with the Fernet key, task and worker tokens signed with the JWT secret, log
    fetches between hosts with the API secret key. Unset, each host would make up its own."""
    return {
        "AIRFLOW__CORE__FERNET_KEY": base64.urlsafe_b64encode(os.urandom(32)).decode(),
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
        "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
    }


def shared_environment(
    *, database_url: str, api_host: str, dags_folder: str, keys: dict[str, str]
) -> dict[str, str]:
    """The settings every Airflow host of one deployment needs alike."""
    api = f"http://{api_host}:{API_PORT}"
    return {
        **keys,
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": database_url,
        "AIRFLOW__DATABASE__EXTERNAL_DB_MANAGERS": EDGE_DB_MANAGER,
        "AIRFLOW__CORE__EXECUTOR": EDGE_EXECUTOR,
        "AIRFLOW__CORE__DAGS_FOLDER": dags_folder,
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{api}/execution/",
        "AIRFLOW__API__BASE_URL": api,
        "AIRFLOW__API__PORT": str(API_PORT),
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__EDGE__API_ENABLED": "True",
        "AIRFLOW__EDGE__API_URL": f"{api}/edge_worker/v1/rpcapi",
        "AIRFLOW__EDGE__JOB_POLL_INTERVAL": "2",
        "AIRFLOW__EDGE__HEARTBEAT_INTERVAL": "5",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "10",
        # A test deployment: every caller of the REST API is an admin (GET /auth/token).
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
    }


@dataclass
class _ComponentState:
    component: str
    pid: int | None = None


class LocalAirflowComponent:
    """`LocalAirflowComponent(dir, "scheduler", env).start()`; `env` holds the shared
    settings (`shared_environment`) and whatever the component's tasks need."""

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        component: str,
        env: dict[str, str] | None = None,
        args: list[str] | None = None,
    ) -> None:
        if component not in COMPONENTS:
            raise AirflowServiceError(
                f"unknown Airflow component {component!r}; choose from {sorted(COMPONENTS)}"
            )
        self.component = component
        self.home = Path(base_dir).resolve() / component
        self.args = list(args or [])
        self._env = {**os.environ, **(env or {}), "AIRFLOW_HOME": str(self.home)}
        self._proc: subprocess.Popen[bytes] | None = None
        self._state = self._load_state() or _ComponentState(component)

    @property
    def log_file(self) -> Path:
        return self.home / f"{self.component}.log"

    def airflow_command(self, *args: str) -> list[str]:
        return [str(Path(sys.executable).parent / "airflow"), *args]

    def start(self, timeout: float = 180.0) -> LocalAirflowComponent:
        if self.is_running():
            return self
        self.home.mkdir(parents=True, exist_ok=True)
        command = self.airflow_command(*COMPONENTS[self.component], *self.args)
        self._proc = spawn(command, self.log_file, cwd=self.home, env=self._env)
        self._state.pid = self._proc.pid
        self._save_state()
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to the component's process group (its task or trigger children too),
        SIGKILL after `timeout`."""
        pid = self._state.pid
        if self.is_running() and pid:
            what = f"Airflow {self.component}"
            stop_group(pid, self.is_running, self._proc, what=what, timeout=timeout)
        self._state.pid = None
        self._save_state()

    def is_running(self) -> bool:
        return server_running(self._state.pid, b"airflow", self._proc)

    def status(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "running": self.is_running(),
            "pid": self._state.pid,
            "log_file": str(self.log_file),
        }

    def log_tail(self, lines: int = 30) -> str:
        return log_tail(self.log_file, lines)

    def _ready(self) -> bool:
        if self.component == "api-server":
            base = self._env["AIRFLOW__API__BASE_URL"].rstrip("/")
            try:
                with urllib.request.urlopen(f"{base}/api/v2/monitor/health", timeout=5) as r:
                    return bool(r.status == 200)
            except (urllib.error.URLError, OSError):
                return False
        if self.component == "edge-worker":
            probe = self.airflow_command("edge", "status")
        else:
            job_type = _JOB_TYPES[self.component]
            probe = self.airflow_command("jobs", "check", "--job-type", job_type, "--local")
        done = subprocess.run(
            probe, env=self._env, capture_output=True, text=True, timeout=60, check=False
        )
        return done.returncode == 0

    def _wait_ready(self, timeout: float) -> None:
        what = f"Airflow {self.component}"
        wait_ready(
            self._ready,
            self.is_running,
            timeout=timeout,
            pause=1.0,
            exited=lambda: AirflowServiceError(
                f"{what} exited during start-up; last lines of {self.log_file}:\n{self.log_tail()}"
            ),
            late=lambda: AirflowServiceError(
                f"{what} was not ready in {timeout:g}s; last lines of {self.log_file}:\n"
                f"{self.log_tail()}"
            ),
        )
        log.info("%s is ready (pid %s)", what, self._state.pid)

    def _load_state(self) -> _ComponentState | None:
        return load_state(self.home / STATE_FILE, _ComponentState)

    def _save_state(self) -> None:
        save_state(self.home / STATE_FILE, self._state)
