"""Whether a server of the local stack runs (its pid, and its command line against reuse)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive


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
