"""Airflow's web UI on this host, with Airflow's own login, for the browser tests and for a
person who wants to look at the provider's pages: a fresh AIRFLOW_HOME, a SQLite metadata
database (`airflow db migrate`), and the api-server (which serves the UI, the REST API and
the plugins' apps) started as a `LocalAirflowComponent` on a free loopback port.

Logins go through Airflow's SimpleAuthManager with users of different roles (by default
`admin` with the ADMIN role and `viewer` with VIEWER) and known passwords, written to the
passwords file before the api-server starts, so it makes up none. Unlike the bed's
deployments (`shared_environment`), not everyone is an admin: a test can log in as a user
with fewer rights, and an anonymous visitor is sent to the login page.

CLI processes of the same deployment (`airflow dags test`, `airflow connections add`) take
`cli_env()`: the same database and keys, their own AIRFLOW_HOME.

    python -m kafkaspark_devstack.airflow_ui --dir .local/airflow-ui   # until Ctrl-C
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from airflow_provider_kafkaspark.core.storage.private_file import write_private
from kafkaspark_devstack.airflow_services import (
    AirflowServiceError,
    LocalAirflowComponent,
    new_shared_secrets,
)
from kafkaspark_devstack.ports import free_port

log = logging.getLogger(__name__)

SIMPLE_AUTH_MANAGER = (
    "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
)
PASSWORDS_FILE = "simple_auth_manager_passwords.json"
# Loopback only: a test deployment is never reachable from another host.
UI_HOST = "127.0.0.1"


@dataclass(frozen=True)
class UiUser:
    """A SimpleAuthManager user: `role` is one of VIEWER, USER, OP, ADMIN."""

    username: str
    role: str
    password: str


# Known passwords, so a test (or a person) can log in; the stack is loopback-only and
# throw-away. The viewer may read everything and change nothing.
ADMIN = UiUser("admin", "ADMIN", "admin-kafkaspark")
VIEWER = UiUser("viewer", "VIEWER", "viewer-kafkaspark")
DEFAULT_USERS: tuple[UiUser, ...] = (ADMIN, VIEWER)
_ROLES = ("VIEWER", "USER", "OP", "ADMIN")


def auth_settings(users: Sequence[UiUser], passwords_file: Path) -> dict[str, str]:
    """The SimpleAuthManager settings that give exactly these users a login."""
    if not users:
        raise AirflowServiceError("the Airflow UI needs at least one user to log in with")
    names = [u.username for u in users]
    if len(set(names)) != len(names):
        raise AirflowServiceError(f"user names repeat: {names}")
    for user in users:
        if user.role not in _ROLES:
            raise AirflowServiceError(
                f"user {user.username!r}: role {user.role!r} is not one of {list(_ROLES)}"
            )
        # `:` and `,` separate the setting's fields; an empty password would never match.
        if not user.username or set(user.username) & set(":,|") or not user.password:
            raise AirflowServiceError(
                f"user {user.username!r}: a name without ':' ',' '|' and a password"
            )
    return {
        "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(
            f"{u.username}:{u.role}" for u in users
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords_file),
    }


def passwords_json(users: Sequence[UiUser]) -> str:
    """The passwords file as SimpleAuthManager reads it: {"username": "password"}."""
    return json.dumps({u.username: u.password for u in users}) + "\n"


def ui_environment(
    *,
    database_file: Path,
    port: int,
    dags_folder: Path,
    passwords_file: Path,
    users: Sequence[UiUser],
    keys: Mapping[str, str],
) -> dict[str, str]:
    """Every setting of the one-host deployment, alike for the api-server and CLI processes."""
    base_url = f"http://{UI_HOST}:{port}"
    return {
        **keys,
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{database_file.resolve()}",
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base_url}/execution/",
        "AIRFLOW__API__HOST": UI_HOST,
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": base_url,
        "AIRFLOW__API__WORKERS": "1",
        **auth_settings(users, passwords_file),
    }


class LocalAirflowUI:
    """`with LocalAirflowUI(dir, dags_folder=...) as ui:` then `ui.base_url`, `ui.users`,
    `ui.cli_env()`; everything it writes stays under `dir`."""

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        *,
        dags_folder: str | os.PathLike[str] | None = None,
        users: Sequence[UiUser] = DEFAULT_USERS,
        port: int | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.base_dir = Path(base_dir).resolve()
        self.users = tuple(users)
        self.port = port or free_port(UI_HOST)
        folder = Path(dags_folder) if dags_folder else self.base_dir / "dags"
        self.settings = ui_environment(
            database_file=self.base_dir / "airflow.db",
            port=self.port,
            dags_folder=folder.resolve(),
            passwords_file=self.base_dir / PASSWORDS_FILE,
            users=self.users,
            keys=new_shared_secrets(),
        )
        # What the api-server's tasks and plugins need beside the settings (PYTHONPATH, ...).
        self.extra_env = dict(env or {})
        self._api: LocalAirflowComponent | None = None

    @property
    def base_url(self) -> str:
        return self.settings["AIRFLOW__API__BASE_URL"]

    @property
    def log_file(self) -> Path:
        return self.base_dir / "api-server" / "api-server.log"

    def user(self, username: str) -> UiUser:
        for user in self.users:
            if user.username == username:
                return user
        raise AirflowServiceError(
            f"no user {username!r}; there are {[u.username for u in self.users]}"
        )

    def cli_env(self) -> dict[str, str]:
        """The environment of an `airflow ...` command against this deployment."""
        return {
            **os.environ,
            **self.extra_env,
            **self.settings,
            "AIRFLOW_HOME": str(self.base_dir / "cli"),
        }

    def airflow(
        self, *args: str, extra_env: Mapping[str, str] | None = None, timeout: float = 300.0
    ) -> subprocess.CompletedProcess[str]:
        """`airflow ARGS` with `cli_env()` and `extra_env`; it must succeed."""
        (self.base_dir / "cli").mkdir(parents=True, exist_ok=True)
        command = [str(Path(sys.executable).parent / "airflow"), *args]
        done = subprocess.run(
            command,
            env={**self.cli_env(), **(extra_env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise AirflowServiceError(
                f"airflow {' '.join(args[:2])} exited {done.returncode}:\n"
                f"{(done.stdout + done.stderr)[-6000:]}"
            )
        return done

    def start(self, timeout: float = 240.0) -> LocalAirflowUI:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        Path(self.settings["AIRFLOW__CORE__DAGS_FOLDER"]).mkdir(parents=True, exist_ok=True)
        write_private(self.base_dir / PASSWORDS_FILE, passwords_json(self.users))
        started = time.monotonic()
        self.airflow("db", "migrate", timeout=timeout)
        env = {**self.extra_env, **self.settings}
        self._api = LocalAirflowComponent(self.base_dir, "api-server", env)
        self._api.start(timeout=max(30.0, timeout - (time.monotonic() - started)))
        log.info("Airflow UI at %s (users: %s)", self.base_url, [u.username for u in self.users])
        return self

    def stop(self) -> None:
        if self._api is not None:
            self._api.stop()

    def is_running(self) -> bool:
        return self._api is not None and self._api.is_running()

    def log_tail(self, lines: int = 40) -> str:
        return self._api.log_tail(lines) if self._api else "(not started)"

    def __enter__(self) -> LocalAirflowUI:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafkaspark_devstack.airflow_ui",
        description="Airflow's UI on a loopback port with an admin and a viewer, until Ctrl-C",
    )
    parser.add_argument("--dir", default=".local/airflow-ui", help="AIRFLOW_HOME and database")
    parser.add_argument("--dags-folder", default=None, help="default: <dir>/dags")
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with LocalAirflowUI(args.dir, dags_folder=args.dags_folder, port=args.port) as ui:
        print(f"Airflow UI: {ui.base_url}/")
        for user in ui.users:
            print(f"  user {user.username} ({user.role}), password {user.password}")
        try:
            while ui.is_running():
                time.sleep(1.0)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
