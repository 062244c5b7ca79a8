"""The local servers' shared start/stop helpers, on real processes."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from kafkaspark_devstack.daemon import spawn, stop_group, wait_ready


class Boom(Exception):
    pass


def test_wait_ready_returns_raises_when_the_server_died_or_is_late() -> None:
    calls = iter([False, False, True])
    wait_ready(lambda: next(calls), lambda: True, timeout=5, pause=0.01, exited=Boom, late=Boom)
    with pytest.raises(Boom, match="died"):
        wait_ready(
            lambda: False,
            lambda: False,
            timeout=5,
            pause=0.01,
            exited=lambda: Boom("died"),
            late=lambda: Boom("late"),
        )
    with pytest.raises(Boom, match="late"):
        wait_ready(
            lambda: False,
            lambda: True,
            timeout=0.05,
            pause=0.01,
            exited=lambda: Boom("died"),
            late=lambda: Boom("late"),
        )


def test_stop_group_ends_a_process_that_ignores_the_polite_signal(tmp_path: Path) -> None:
    # The child ignores SIGTERM: only the SIGKILL after the bound ends it.
    script = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ignoring', flush=True); time.sleep(60)"
    )
    log = tmp_path / "server.log"
    child = spawn(["python3", "-c", script], log)
    try:
        assert pid_alive(child.pid)
        wait_ready(
            lambda: "ignoring" in log.read_text(),
            lambda: child.poll() is None,
            timeout=30,
            pause=0.02,
            exited=lambda: Boom("exited"),
            late=lambda: Boom("late"),
        )
        stop_group(
            child.pid,
            lambda: child.poll() is None,
            child,
            what="test server",
            first_signal=signal.SIGTERM,
            timeout=0.5,
        )
        assert child.poll() == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
