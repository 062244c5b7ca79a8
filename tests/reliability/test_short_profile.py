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
from reliability.scenarios import MODULES, available, run_name, storages

PROFILE = Profile.named("short")
# A backstop against a hung run, above the suite's default (pyproject.toml): every wait in a
# scenario has its own bound and says what it waited for, and a scenario on a slow machine
# runs as long as its faults take.
SCENARIO_TIMEOUT_S = 3_600
# The scenarios CI also runs with their state on the real S3 server: none. The S3-capable
# ones have S3 counterparts among the integration tests (test_exactly_once's crash test,
# test_stop_restore_storage, test_periodic_savepoint) and in tests/faults and tests/cluster,
# and run here on S3 with `python -m reliability.run --storage s3`.
S3_IN_CI: tuple[str, ...] = ()
RUNS = [(name, "local") for name in MODULES] + [(name, "s3") for name in S3_IN_CI]
_results: dict[str, ScenarioResult] = {}


def test_every_scenario_of_the_issue_exists() -> None:
    assert available() == list(MODULES)
    assert all("s3" in storages(name) for name in S3_IN_CI)


@pytest.mark.timeout(SCENARIO_TIMEOUT_S)
@pytest.mark.parametrize(("name", "storage"), RUNS, ids=[run_name(*run) for run in RUNS])
def test_scenario(name: str, storage: str, tmp_path: Path) -> None:
    result = run_one(name, PROFILE, tmp_path, storage)
    assert result.name == run_name(name, storage)
    _results[result.name] = result
    assert result.passed, json.dumps(result.to_dict(), indent=2, default=str)
    assert result.faults_injected > 0 and result.records_checked > 0
    assert result.duplicates == 0 and result.missing == 0


def test_figures_written_and_rendered(tmp_path: Path) -> None:
    names = [run_name(*run) for run in RUNS]
    if set(_results) != set(names):
        pytest.fail(f"scenarios not run in this session: {sorted(set(names) - set(_results))}")
    out = write_results(PROFILE, list(_results.values()), tmp_path)
    raw = json.loads(out.read_text())
    assert sorted(s["name"] for s in raw["scenarios"]) == sorted(names)
    table = report.render(tmp_path)
    for name in names:
        row = next(line for line in table.splitlines() if line.startswith(f"| {name}:"))
        assert row.count("|") == len(report.COLUMNS) + 1
        assert "| pass |" in row
