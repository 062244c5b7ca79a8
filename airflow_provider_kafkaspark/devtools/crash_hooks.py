"""Test-only: the crash behind `spark/fault_points.py`, out of the runtime wheel.

`crash_now` sends SIGKILL to the driver's process group (the Python driver and its JVM) and
to the caller's own group (in local mode the Python workers live in a group of their own,
made by pyspark's daemon).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path


def _process_group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def _is_ancestor(pid: int) -> bool:
    """True if `pid` is this process or one of its ancestors (read from /proc)."""
    current = os.getpid()
    for _ in range(64):
        if current == pid:
            return True
        if current <= 1:
            return False
        try:
            stat = Path(f"/proc/{current}/stat").read_text()
        except OSError:
            return False
        # The command name may hold spaces and parentheses: split after the last ')'.
        current = int(stat.rsplit(")", 1)[1].split()[1])
    return False


def crash_now(point: str, batch_id: int, *, marker: str, driver_pid: int | None) -> None:
    """Write the crash marker (if any) and SIGKILL the job.

    The driver's process group is killed first, but only if `driver_pid` is an ancestor of
    this process (local mode): a worker on another machine must never signal a process group
    that merely shares the number."""
    marker = marker.strip()
    if marker:
        Path(marker).parent.mkdir(parents=True, exist_ok=True)
        Path(marker).write_text(f"{point}:{batch_id} pid={os.getpid()}\n")
    own_group = os.getpgrp()
    if driver_pid is not None and _is_ancestor(driver_pid):
        driver_group = _process_group(driver_pid)
        if driver_group is not None and driver_group != own_group:
            os.killpg(driver_group, signal.SIGKILL)
    os.killpg(own_group, signal.SIGKILL)
