"""What a submit decides about a live driver on the checkpoint (`if_running`), and the marker
it leaves before it asks the cluster manager."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.backends.base import SubmitOptions, Submitted
from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef, YarnJobRef
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker, resolve_starting
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import ClusterUnavailableError, InvalidArgumentError
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from airflow_provider_kafkaspark.lifecycle.submit import (
    RunningDecision,
    decide_if_running,
    looked_up,
    submit_job,
)
from tests.unit.airflow_helpers import lease


def test_if_running_decides_only_with_a_live_lease() -> None:
    assert decide_if_running(None, "fail") is RunningDecision.SUBMIT
    assert decide_if_running(lease(), "fail") is RunningDecision.FAIL
    assert decide_if_running(lease(), "skip") is RunningDecision.SKIP
    assert decide_if_running(lease(), "replace") is RunningDecision.REPLACE
    with pytest.raises(InvalidArgumentError, match="'restart'"):
        decide_if_running(None, "restart")


def test_a_driver_still_starting_counts_as_running_and_its_own_submitter_takes_it_up() -> None:
    ref = {"backend": "yarn", "application_id": "application_1_0001"}
    starting = SubmittedMarker(1_000, "job", "airflow:d.submit", "worker-1", job_ref=ref)
    # The same task, retried after its worker was lost between the submit and its result.
    assert decide_if_running(None, "fail", starting, "airflow:d.submit") is RunningDecision.ADOPT
    # Anyone else finds the job running: it fails, skips or replaces as asked.
    assert decide_if_running(None, "fail", starting, "cli:ops") is RunningDecision.FAIL
    assert decide_if_running(None, "skip", starting, "cli:ops") is RunningDecision.SKIP
    # A marker without a reference (an older release's) cannot be taken up.
    bare = SubmittedMarker(1_000, "job", "airflow:d.submit", "worker-1")
    assert decide_if_running(None, "fail", bare, "airflow:d.submit") is RunningDecision.FAIL
    # A live lease decides over any marker.
    assert decide_if_running(lease(), "fail", starting, "airflow:d.submit") is RunningDecision.FAIL


def test_a_running_driver_its_own_submitter_started_is_taken_up() -> None:
    ref = {"backend": "yarn", "application_id": "application_1_0001"}
    marker = SubmittedMarker(1_000, "job", "airflow:d.submit", "worker-1", job_ref=ref)
    holder = replace(lease(), application_id="application_1_0001")
    # The retry of the submit whose driver has taken its lease since.
    decided = decide_if_running(holder, "fail", None, "airflow:d.submit", marker)
    assert decided is RunningDecision.ADOPT
    # Anyone else, or a holder of another application (a later submit's), is a running job.
    assert decide_if_running(holder, "fail", None, "cli:ops", marker) is RunningDecision.FAIL
    other = replace(holder, application_id="application_1_0002")
    assert decide_if_running(other, "skip", None, "airflow:d.submit", marker).value == "skip"
    # A local driver's lease names no application: nothing to match.
    assert decide_if_running(lease(), "fail", None, "airflow:d.submit", marker).value == "fail"


# -- a submit whose host dies before it records its driver --------------------------------


REF = {"backend": "yarn", "application_id": "application_1_0007"}


def test_a_marker_without_a_driver_is_resolved_by_the_manager_s_answer() -> None:
    early = SubmittedMarker(1_000, "job", "airflow:d.submit", "worker-1", submit_id="s1")
    # The manager has the submit's driver: it is named, whoever asks.
    found = resolve_starting(early, REF, "cli:ops")
    assert found is not None and found.job_ref == REF and found.submit_id == "s1"
    # It has none: the same submitter's earlier try died before the manager accepted it.
    assert resolve_starting(early, None, "airflow:d.submit") is None
    # Another submitter cannot tell whether that submit is still on its way.
    assert resolve_starting(early, None, "cli:ops") is early
    # Markers that name their driver, or carry no submit id, are left as they are.
    named = SubmittedMarker(1_000, "job", "airflow:d.submit", "worker-1", job_ref=REF)
    assert resolve_starting(named, None, "airflow:d.submit") is named
    assert resolve_starting(None, REF, "airflow:d.submit") is None


class LookupBackend:
    """A backend whose cluster manager keeps the submit's id (a pure-logic stand-in: the
    real YARN lookup runs in tests/cluster)."""

    name = "yarn"

    def __init__(self, fail: bool = False, has: bool = False) -> None:
        self.fail, self.has = fail, has
        self.ids: list[str | None] = []
        self.markers: list[SubmittedMarker | None] = []

    def submit(self, spec: JobSpec, options: SubmitOptions) -> Submitted:
        self.ids.append(options.submit_id)
        self.markers.append(ControlFolder(spec.checkpoint_location).read_submitted())
        if self.fail:
            raise ClusterUnavailableError("spark-submit printed no application id")
        return Submitted(self.ref(spec))

    def find_submitted(self, spec: JobSpec, submit_id: str) -> JobRef | None:
        return self.ref(spec) if self.has and submit_id in self.ids else None

    @staticmethod
    def ref(spec: JobSpec) -> YarnJobRef:
        return YarnJobRef(
            spec.job_name, spec.checkpoint_location, "application_1_0007", "http://rm"
        )


def local_spec(tmp_path: Path) -> JobSpec:
    raw = job_spec_dict(bootstrap_servers="k:9092", checkpoint=str(tmp_path / "cp"))
    return JobSpec.from_dict(raw)


def test_the_marker_names_the_submit_before_the_manager_is_asked(tmp_path: Path) -> None:
    spec, backend = local_spec(tmp_path), LookupBackend()
    options = SubmitOptions(workdir=str(tmp_path), submitted_by="airflow:d.submit")
    handle = submit_job(backend, spec, options)  # type: ignore[arg-type]
    (before,) = backend.markers
    assert before is not None and before.job_ref is None
    assert before.submit_id == backend.ids[0] and before.submitted_by == "airflow:d.submit"
    after = ControlFolder(spec.checkpoint_location).read_submitted()
    assert after is not None and after.submit_id == before.submit_id
    assert after.job_ref == handle["job_ref"]


def test_a_retry_takes_up_the_driver_its_dead_try_left_unrecorded(tmp_path: Path) -> None:
    spec, backend = local_spec(tmp_path), LookupBackend(has=True)
    options = SubmitOptions(workdir=str(tmp_path), submitted_by="airflow:d.submit")
    submit_job(backend, spec, options)  # type: ignore[arg-type]
    control = ControlFolder(spec.checkpoint_location)
    early = backend.markers[0]
    assert early is not None
    control.write_submitted(early)  # as if the host died before `record_submit`
    resolved = looked_up(backend, spec, early, "airflow:d.submit")  # type: ignore[arg-type]
    assert resolved is not None and resolved.job_ref is not None
    assert resolved.job_ref["application_id"] == "application_1_0007"
    written = control.read_submitted()
    assert written is not None and written.job_ref == resolved.job_ref  # stops see it too
    # The manager never had it: the retry submits.
    assert looked_up(LookupBackend(), spec, early, "airflow:d.submit") is None  # type: ignore[arg-type]


def test_a_failed_submit_leaves_no_marker_to_wait_for(tmp_path: Path) -> None:
    spec, backend = local_spec(tmp_path), LookupBackend(fail=True)
    options = SubmitOptions(workdir=str(tmp_path))
    with pytest.raises(ClusterUnavailableError):
        submit_job(backend, spec, options)  # type: ignore[arg-type]
    assert backend.markers[0] is not None  # it was there while the manager was asked
    assert ControlFolder(spec.checkpoint_location).read_submitted() is None
