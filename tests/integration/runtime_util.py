"""Running real drivers (the package's runner in Spark local mode) from tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.core.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.core.control import ControlFolder
from airflow_provider_kafkaspark.core.jobspec import JobSpec
from airflow_provider_kafkaspark.local.jobs import LocalJobHandle, read_log, start_local_job


def start(spec: dict[str, Any], workdir: Path, env: dict[str, str] | None = None) -> LocalJobHandle:
    return start_local_job(JobSpec.from_dict(spec), workdir, env=env)


def wait_until(
    handle: LocalJobHandle | None, what: str, check: Callable[[], bool], timeout: float = 180
) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if handle is not None and not handle.is_alive():
            raise AssertionError(f"driver exited while waiting for {what}:\n{read_log(handle)}")
        if time.monotonic() > deadline:
            log = read_log(handle) if handle else ""
            raise AssertionError(f"timed out waiting for {what}:\n{log}")
        time.sleep(0.5)


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
