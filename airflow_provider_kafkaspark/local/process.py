"""Process liveness on this host, zombie-aware."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def pid_alive(pid: int | None) -> bool:
    """True while `pid` runs. A zombie (exited, not yet reaped) still answers kill(0);
    its /proc state says it is gone."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state != "Z"


def proc_cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def server_running(pid: int | None, marker: bytes, child: subprocess.Popen[bytes] | None) -> bool:
    """Whether a local server process runs. For a child this process started, its own status:
    between fork and exec a just-started child still shows the parent's command line, so a
    start checked there looked failed (and left the server running). For a server started
    elsewhere (its pid from a state file), a live pid whose command line holds `marker`, so
    that a reused pid does not count."""
    if child is not None and child.pid == pid:
        return child.poll() is None
    return pid_alive(pid) and marker in proc_cmdline(pid or 0)


def holder_gone(host: str, pid: int) -> bool:
    """True when a lease holder ran on this host and its process is gone: a driver that
    crashed a moment ago, whose fresh lease nobody can be using."""
    import socket

    return host == socket.gethostname() and not pid_alive(pid)


def reap(pid: int) -> None:
    """Collect `pid`'s exit status if it is this process's child (no zombie left)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
