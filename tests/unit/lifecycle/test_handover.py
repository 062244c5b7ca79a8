"""The handover's decisions over real control files in a local folder; the standby driver
itself runs in tests/integration/test_handover.py."""

from __future__ import annotations

import os
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.backends.base import SubmitOptions, Submitted
from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef, job_ref_to_dict
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec, JobSpecError
from airflow_provider_kafkaspark.errors import InvalidArgumentError
from airflow_provider_kafkaspark.lifecycle.handover import hand_over, submit_standby


def spec_at(checkpoint: Path) -> JobSpec:
    return JobSpec.from_dict(
        {
            "job_name": "orders",
            "source": {"bootstrap_servers": "localhost:9092", "subscribe": ["in"]},
            "sink": {"kind": "kafka_exactly_once", "topic": "out"},
            "checkpoint_location": str(checkpoint),
        }
    )


@dataclass
class RecordingBackend:
    """Records the specs it is asked to start; the driver is this test's own process."""

    specs: list[JobSpec] = field(default_factory=list)
    name = "local"

    def submit(self, spec: JobSpec, options: SubmitOptions) -> Submitted:
        self.specs.append(spec)
        ref = LocalJobRef(
            spec.job_name,
            spec.checkpoint_location,
            socket.gethostname(),
            os.getpid(),
            "/tmp/driver.log",
            "local[2]",
        )
        return Submitted(ref, {"log_file": "/tmp/driver.log"})


OPTIONS = SubmitOptions(workdir="/tmp", submitted_by="test")


def test_a_standby_is_started_with_a_token_and_leaves_the_control_folder_alone(
    tmp_path: Path,
) -> None:
    backend = RecordingBackend()
    spec = spec_at(tmp_path / "checkpoint")
    standby = submit_standby(backend, spec, OPTIONS, timeout_s=60)  # type: ignore[arg-type]
    started = backend.specs[0]
    assert started.standby_token == standby["standby_token"]
    assert started.standby_token is not None
    assert started.standby_token.startswith("orders-standby-")
    assert started.standby_timeout_s == 60
    assert standby["checkpoint"] == spec.checkpoint_location
    control = ControlFolder(spec.checkpoint_location)
    assert control.read_submitted() is None and control.read_handover() is None


def test_the_handover_names_the_standby_and_records_it_as_the_jobs_driver(
    tmp_path: Path,
) -> None:
    spec = spec_at(tmp_path / "checkpoint")
    standby = submit_standby(RecordingBackend(), spec, OPTIONS)  # type: ignore[arg-type]
    handle = hand_over(spec, standby, OPTIONS)
    assert handle is not None and handle["standby_token"] == standby["standby_token"]
    control = ControlFolder(spec.checkpoint_location)
    handover = control.read_handover()
    assert handover is not None and handover.token == standby["standby_token"]
    marker = control.read_submitted()
    assert marker is not None and marker.job_ref == standby["job_ref"]
    assert handle["job_ref"] == standby["job_ref"] and handle["log_file"] == "/tmp/driver.log"


def test_a_gone_standby_is_not_handed_over(tmp_path: Path) -> None:
    spec = spec_at(tmp_path / "checkpoint")
    standby = submit_standby(RecordingBackend(), spec, OPTIONS)  # type: ignore[arg-type]
    gone = subprocess.Popen(["true"])
    gone.wait()
    ref = LocalJobRef("orders", spec.checkpoint_location, socket.gethostname(), gone.pid, "", "")
    assert hand_over(spec, {**standby, "job_ref": job_ref_to_dict(ref)}, OPTIONS) is None
    assert ControlFolder(spec.checkpoint_location).read_handover() is None


def test_no_handover_while_a_driver_holds_the_lease(tmp_path: Path) -> None:
    spec = spec_at(tmp_path / "checkpoint")
    standby = submit_standby(RecordingBackend(), spec, OPTIONS)  # type: ignore[arg-type]
    ControlFolder(spec.checkpoint_location).acquire_lease(Lease.new("orders"))
    with pytest.raises(InvalidArgumentError, match="holds the lease"):
        hand_over(spec, standby, OPTIONS)
    assert ControlFolder(spec.checkpoint_location).read_handover() is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"standby_token": None}, "standby_token"),
        ({"job_ref": "x"}, "job_ref"),
        ({"checkpoint": "/elsewhere"}, "/elsewhere"),
    ],
)
def test_a_handle_that_is_not_a_standby_of_the_job_is_refused(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    spec = spec_at(tmp_path / "checkpoint")
    standby = submit_standby(RecordingBackend(), spec, OPTIONS)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=message):
        hand_over(spec, {**standby, **change}, OPTIONS)


def test_the_spec_checks_the_standby_fields(tmp_path: Path) -> None:
    raw = spec_at(tmp_path / "c").to_dict()
    with pytest.raises(JobSpecError, match="standby_token"):
        JobSpec.from_dict({**raw, "standby_token": "a b"})
    with pytest.raises(JobSpecError, match="standby_timeout_s"):
        JobSpec.from_dict({**raw, "standby_timeout_s": 0})
