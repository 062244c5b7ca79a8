"""What the local stack's single-process servers (the S3 store, PostgreSQL, Airflow's
components) share: a detached start with the output in a log file, a stop of the whole
process group (a polite signal, SIGKILL after a bound), and a JSON state file that lets a
later process (the CLI's `stop` or `status`) find the server again."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from airflow_provider_kafkaspark.core.storage.private_file import write_private

log = logging.getLogger(__name__)

T = TypeVar("T")


def spawn(
    command: list[str],
    log_file: Path,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start `command` in a session of its own (it outlives its starter), appending its
    output to `log_file`."""
    with open(log_file, "ab") as out:
        return subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def stop_group(
    pid: int,
    running: Callable[[], bool],
    child: subprocess.Popen[bytes] | None,
    *,
    what: str,
    first_signal: signal.Signals = signal.SIGTERM,
    timeout: float = 30.0,
) -> None:
    """`first_signal` to the process group of `pid`, SIGKILL when it still runs after
    `timeout` seconds; a child of this process is reaped on the way."""
    os.killpg(pid, first_signal)
    deadline = time.monotonic() + timeout
    while running() and time.monotonic() < deadline:
        reap(child)
        time.sleep(0.1)
    if running():
        log.warning("%s did not stop in %ss: killing it", what, timeout)
        os.killpg(pid, signal.SIGKILL)
        reap(child, 10.0)


def reap(child: subprocess.Popen[bytes] | None, timeout: float = 0.0) -> None:
    if child is not None:
        try:
            child.wait(timeout)
        except subprocess.TimeoutExpired:
            pass


def load_state(path: Path, kind: Callable[..., T]) -> T | None:
    if not path.is_file():
        return None
    return kind(**json.loads(path.read_text()))


def save_state(path: Path, state: Any) -> None:
    """The state file, readable by its owner only (it may hold keys)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_private(path, json.dumps(asdict(state), indent=2))


def wait_ready(
    ready: Callable[[], bool],
    running: Callable[[], bool],
    *,
    timeout: float,
    pause: float,
    exited: Callable[[], Exception],
    late: Callable[[], Exception],
) -> None:
    """Poll `ready()` every `pause` seconds until it holds; raise `exited()` when the server
    died meanwhile, `late()` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    for _ in range(int(timeout / pause) + 1):
        if not running():
            raise exited()
        if ready():
            return
        if time.monotonic() > deadline:
            break
        time.sleep(pause)
    raise late()


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
