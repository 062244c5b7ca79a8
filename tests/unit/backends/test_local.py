"""The local backend's submit: the launcher's reference is the job reference (of the
backend's own kind), and the submit's handle keeps the keys it has always shown."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.backends import local_driver
from airflow_provider_kafkaspark.backends.base import SubmitOptions
from airflow_provider_kafkaspark.backends.local import LocalBackend, StandaloneBackend
from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef, StandaloneJobRef
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

HANDLE_KEYS = {
    "job_name",
    "pid",
    "log_file",
    "spec_file",
    "checkpoint",
    "master",
    "started_at_ms",
    "work_dir",
}


def _spec(tmp_path: Path) -> JobSpec:
    return JobSpec.from_dict(
        {
            "job_name": "orders",
            "source": {"bootstrap_servers": "localhost:9092", "subscribe": ["in"]},
            "sink": {"kind": "kafka_exactly_once", "topic": "out"},
            "checkpoint_location": str(tmp_path / "cp"),
        }
    )


@pytest.mark.parametrize(
    ("backend", "kind"),
    [
        (LocalBackend("local[2]"), LocalJobRef),
        (StandaloneBackend("spark://m:7077"), StandaloneJobRef),
    ],
)
def test_the_launchers_reference_is_the_submits(
    backend: LocalBackend, kind: type[LocalJobRef], tmp_path: Path, monkeypatch: Any
) -> None:
    def launch(spec: JobSpec, workdir: str, **options: Any) -> LocalJobRef:
        made: LocalJobRef = options["ref_type"](
            spec.job_name,
            spec.checkpoint_location,
            socket.gethostname(),
            4242,
            f"{workdir}/orders.log",
            options["master"],
            spec_file=f"{workdir}/orders.spec.json",
            started_at_ms=1_700_000_000_000,
            work_dir=f"{workdir}/orders.work",
        )
        return made

    monkeypatch.setattr(local_driver, "start_local_job", launch)
    submitted = backend.submit(_spec(tmp_path), SubmitOptions(workdir="/w"))
    assert type(submitted.ref) is kind and submitted.ref.master == backend.master
    assert set(submitted.details) == HANDLE_KEYS
    assert submitted.details["pid"] == 4242
    assert submitted.details["log_file"] == "/w/orders.log"
    assert submitted.details["work_dir"] == "/w/orders.work"
    assert submitted.details["started_at_ms"] == 1_700_000_000_000
