"""Restart budget: bounded restarts in a sliding window, exponential back-off."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.core.cluster.restart import RestartBudget, RestartPolicy
from airflow_provider_kafkaspark.errors import InvalidInputError


def test_backoff_doubles_and_budget_runs_out() -> None:
    budget = RestartBudget(
        RestartPolicy(max_restarts=3, window_s=100, backoff_s=2, backoff_max_s=5)
    )
    delays = []
    for now in (0.0, 1.0, 2.0):
        delay = budget.next_delay(now)
        assert delay is not None
        delays.append(delay)
        budget.record(now)
    assert delays == [2.0, 4.0, 5.0]  # capped at backoff_max_s
    assert budget.next_delay(3.0) is None  # a fourth restart within the window: give up


def test_old_restarts_leave_the_window() -> None:
    budget = RestartBudget(RestartPolicy(max_restarts=1, window_s=10, backoff_s=1, backoff_max_s=1))
    budget.record(0.0)
    assert budget.next_delay(5.0) is None
    assert budget.next_delay(11.0) == 1.0


@pytest.mark.parametrize(
    "kwargs",
    [{"max_restarts": -1}, {"window_s": 0}, {"backoff_s": 10, "backoff_max_s": 1}],
)
def test_bad_policies_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(InvalidInputError, match="restart policy"):
        RestartPolicy(**kwargs)  # type: ignore[arg-type]
