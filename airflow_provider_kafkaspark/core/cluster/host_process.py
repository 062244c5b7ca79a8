"""Process liveness on this host, zombie-aware."""

from __future__ import annotations

import os
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
