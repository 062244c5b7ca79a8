"""What a submit decides about a live driver on the checkpoint (`if_running`)."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker
from airflow_provider_kafkaspark.errors import InvalidArgumentError
from airflow_provider_kafkaspark.lifecycle.submit import RunningDecision, decide_if_running
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
