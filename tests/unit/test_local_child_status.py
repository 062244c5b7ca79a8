"""A just-started local server is judged by its own process status, not its command line:
between fork and exec a child still shows the parent's command line, and a start that
looked at it there reported "exited during start-up" and left the server running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafkaspark_devstack.process import server_running
from kafkaspark_devstack.s3 import LocalS3Server


def _child() -> subprocess.Popen[bytes]:
    # A command line with neither "weed" nor "kafka.Kafka" in it, as before the exec.
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])


def test_a_server_that_is_our_child_runs_until_it_exits() -> None:
    proc = _child()
    try:
        assert server_running(proc.pid, b"kafka.Kafka", proc)
        assert not server_running(proc.pid, b"kafka.Kafka", None)  # not ours: the command line
    finally:
        proc.kill()
        proc.wait()
    assert not server_running(proc.pid, b"kafka.Kafka", proc)


def test_an_s3_server_that_is_our_child_runs_until_it_exits(tmp_path: Path) -> None:
    server = LocalS3Server(tmp_path)
    proc = _child()
    server._proc, server._state.pid = proc, proc.pid
    try:
        assert server.is_running()
    finally:
        proc.kill()
        proc.wait()
    assert not server.is_running()
