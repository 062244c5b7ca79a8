"""The reliability suite's short profile, scenario by scenario, against the real local stack.

Each scenario starts its own Kafka and Spark drivers and reports counts; the test fails with
the scenario's own list of failed checks. The figures of this run are written (as the suite
writes them) to a temporary results folder and rendered into a table, which is checked to
carry every scenario; the committed figures in benchmarks/results/ come from
`python -m reliability.run` (`make chaos` for the long profile).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reliability import report
from reliability.model import Profile, ScenarioResult
from reliability.run import run_one, write_results
from reliability.scenarios import MODULES, available

PROFILE = Profile.named("short")
# A backstop against a hung run, above the suite's default (pyproject.toml): every wait in a
# scenario has its own bound and says what it waited for, and a scenario on a slow machine
# runs as long as its faults take.
SCENARIO_TIMEOUT_S = 3_600
_results: dict[str, ScenarioResult] = {}


def test_every_scenario_of_the_issue_exists() -> None:
    assert available() == list(MODULES)


@pytest.mark.timeout(SCENARIO_TIMEOUT_S)
@pytest.mark.parametrize("name", MODULES)
def test_scenario(name: str, tmp_path: Path) -> None:
    result = run_one(name, PROFILE, tmp_path)
    _results[name] = result
    assert result.passed, json.dumps(result.to_dict(), indent=2, default=str)
    assert result.faults_injected > 0 and result.records_checked > 0
    assert result.duplicates == 0 and result.missing == 0


def test_figures_written_and_rendered(tmp_path: Path) -> None:
    if set(_results) != set(MODULES):
        pytest.fail(f"scenarios not run in this session: {sorted(set(MODULES) - set(_results))}")
    out = write_results(PROFILE, list(_results.values()), tmp_path)
    raw = json.loads(out.read_text())
    assert [s["name"] for s in raw["scenarios"]] == list(MODULES)
    table = report.render(tmp_path)
    for name in MODULES:
        row = next(line for line in table.splitlines() if line.startswith(f"| {name}:"))
        assert row.count("|") == len(report.COLUMNS) + 1
        assert "| pass |" in row
