"""Running real drivers (the package's runner in Spark local mode) from tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.backends.local_driver import start_local_job
from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from kafkaspark_devstack.drivers import read_log


def start(spec: dict[str, Any], workdir: Path, env: dict[str, str] | None = None) -> LocalJobRef:
    return start_local_job(JobSpec.from_dict(spec), workdir, env=env)


def wait_until(
    handle: LocalJobRef | None,
    what: str,
    check: Callable[[], bool],
    timeout: float = 180,
    *,
    seen: Callable[[], object] | None = None,
) -> None:
    """Poll `check` until it holds; `timeout` is a bound for a slow or stuck machine, not the
    time anything is expected to take. Fails at once if the driver exits, and on giving up
    says what it waited for and what it saw last: `seen()` if given, else the driver's
    checkpoint (last committed batch, lease), then the driver's log."""
    started = time.monotonic()
    while not check():
        if handle is not None and not pid_alive(handle.pid):
            raise AssertionError(f"driver exited while waiting for {what}:\n{read_log(handle)}")
        waited = time.monotonic() - started
        if waited > timeout:
            last = seen() if seen is not None else _driver_state(handle)
            log = read_log(handle) if handle else ""
            raise AssertionError(
                f"gave up after {waited:.0f}s (bound {timeout:g}s) waiting for {what}; "
                f"last saw: {last}\n{log}"
            )
        time.sleep(0.5)


def _driver_state(handle: LocalJobRef | None) -> str:
    if handle is None:
        return "the condition false"
    return (
        f"the condition false; driver {handle.pid} alive={pid_alive(handle.pid)}, "
        f"last committed batch {committed_batches(handle.checkpoint)}, "
        f"lease held={has_lease(handle.checkpoint)}"
    )


def committed_batches(checkpoint: str) -> int:
    try:
        position = CheckpointReader(checkpoint).position()
    except Exception:  # noqa: BLE001 - not written yet
        return -1
    return -1 if position.latest_committed is None else position.latest_committed


def has_lease(checkpoint: str) -> bool:
    try:
        return ControlFolder(checkpoint).read_lease() is not None
    except Exception:  # noqa: BLE001 - half-created folder
        return False
