"""docs/reliability.md, rendered from the suite's JSON (never typed by hand)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reliability.scenarios import MODULES

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "reliability.md"
PROFILES = ("short", "long")

HEADER = """# Reliability figures

Rendered by `python -m reliability.report` from `benchmarks/results/reliability_<profile>.json`,
which `python -m reliability.run --profile <profile>` writes (`make chaos` runs the long
profile; CI runs the short one in `tests/reliability/`). Every scenario runs against the real
local stack: Kafka in KRaft mode, Spark in local mode, the operators' own code paths. A
scenario passes when every check it records holds and it found 0 duplicates and 0 missing.
"""

COLUMNS = (
    "scenario",
    "faults",
    "records checked",
    "duplicates",
    "missing",
    "restarts",
    "result",
    "seconds",
)


def results_file(profile: str, results_dir: Path = RESULTS) -> Path:
    return results_dir / f"reliability_{profile}.json"


def _row(scenario: dict[str, Any]) -> str:
    verdict = "pass" if scenario["passed"] else "FAIL: " + "; ".join(scenario["failures"])[:200]
    cells = (
        f"{scenario['name']}: {scenario['title']}",
        f"{scenario['faults_injected']:,}",
        f"{scenario['records_checked']:,}",
        f"{scenario['duplicates']:,}",
        f"{scenario['missing']:,}",
        f"{scenario['restarts']:,}",
        verdict,
        f"{scenario['seconds']:.0f}",
    )
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _checks(scenario: dict[str, Any]) -> str:
    shown = ", ".join(f"`{k}`={_short(json.dumps(v))}" for k, v in scenario["checks"].items())
    return f"- **{scenario['name']}**: {shown}" if shown else f"- **{scenario['name']}**: -"


def _short(text: str, limit: int = 240) -> str:
    """Long observed values (whole error messages) cut for the table; the JSON has them."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(results_dir: Path = RESULTS) -> str:
    parts = [HEADER]
    for profile in PROFILES:
        path = results_file(profile, results_dir)
        if not path.exists():
            parts.append(f"\n## {profile} profile\n\nNot run yet.\n")
            continue
        raw = json.loads(path.read_text())
        order = {name: i for i, name in enumerate(MODULES)}
        # A scenario's runs on other storages (`name[s3]`) right after its local run.
        scenarios = sorted(
            raw["scenarios"],
            key=lambda s: (order.get(s["name"].split("[")[0], 99), "[" in s["name"]),
        )
        parts.append(
            f"\n## {profile} profile, run {raw['finished_at']}\n\n"
            f"Machine: {raw['machine']['cpus']} CPUs, Python {raw['machine']['python']}. "
            f"Profile: {json.dumps(raw['profile'])}.\n\n"
            "| "
            + " | ".join(COLUMNS)
            + " |\n|"
            + "---|" * len(COLUMNS)
            + "\n"
            + "\n".join(_row(s) for s in scenarios)
            + "\n\nWhat each scenario checked, with the observed values:\n\n"
            + "\n".join(_checks(s) for s in scenarios)
            + "\n"
        )
    return "".join(parts)


def write(results_dir: Path = RESULTS, doc: Path = DOC) -> Path:
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(render(results_dir))
    return doc


if __name__ == "__main__":
    print(f"written to {write()}")
