"""What a submit decides about a live driver on the checkpoint (`if_running`)."""

from __future__ import annotations

import pytest

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
