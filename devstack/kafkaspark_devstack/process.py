"""Processes of this machine as the local stack sees them: whether a server runs (its pid,
and its command line against reuse), every command line, a process's children."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive


def proc_cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def command_lines() -> Iterator[tuple[int, bytes]]:
    """(pid, command line) of every process this PID namespace shows; one that ends while
    read is left out."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            command = proc_cmdline(int(entry.name))
            if command:
                yield int(entry.name), command


def program_of(command: bytes) -> bytes:
    """The file name of a command line's program (`/usr/bin/python3 -m x` -> `python3`)."""
    return command.split(b"\0", 1)[0].rsplit(b"/", 1)[-1]


def child_pids(pid: int) -> list[int]:
    """The children of `pid` (of each of its threads); none once it is gone."""
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        return []
    return found


def server_running(pid: int | None, marker: bytes, child: subprocess.Popen[bytes] | None) -> bool:
    """Whether a local server process runs. For a child this process started, its own status:
    between fork and exec a just-started child still shows the parent's command line, so a
    start checked there looked failed (and left the server running). For a server started
    elsewhere (its pid from a state file), a live pid whose command line holds `marker`, so
    that a reused pid does not count."""
    if child is not None and child.pid == pid:
        return child.poll() is None
    return pid_alive(pid) and marker in proc_cmdline(pid or 0)
