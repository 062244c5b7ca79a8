"""LogNotifier: one line per announcement, rendered for that alert, at WARNING for a breach and
INFO for its all-clear, in the task log."""

from __future__ import annotations

from typing import Any, cast

import pytest
from airflow.sdk import Context

from airflow_provider_kafkaspark.notifiers import ALERT_KEY, JOB_KEY, LogNotifier


def alert_context(kind: str, message: str) -> Context:
    alert: dict[str, Any] = {"kind": kind, "message": message, "lag_records": 4402}
    return cast(Context, {ALERT_KEY: alert, JOB_KEY: "ip_count"})


def logged(capsys: pytest.CaptureFixture[str], needle: str) -> list[str]:
    out = capsys.readouterr()
    return [line for line in (out.out + out.err).splitlines() if needle in line]


def test_a_breach_is_a_warning_line(capsys: pytest.CaptureFixture[str]) -> None:
    LogNotifier()(alert_context("breach", "SLO breach: lag; lag 4,402 records (SLO <= 3,000)"))
    (line,) = logged(capsys, "kafkaspark watch of ip_count:")
    assert "warning" in line and "SLO breach: lag; lag 4,402 records (SLO <= 3,000)" in line


def test_an_all_clear_is_an_info_line_and_the_template_is_the_callers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    notifier = LogNotifier(message="{{ kafkaspark_job }} is fine again ({{ slo_alert.kind }})")
    notifier(alert_context("clear", "SLO cleared"))
    (line,) = logged(capsys, "ip_count is fine again (clear)")
    assert "info" in line and "warning" not in line
