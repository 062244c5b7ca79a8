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


ACROSS_HOSTS_COLUMNS = (
    "fault",
    "duration s",
    "records checked",
    "duplicates",
    "missing",
    "lease holders at most",
    "recover s",
    "run",
)

ACROSS_HOSTS_HEADER = """
## Across hosts

Faults between the hosts of the multi-host bed (network and PID namespaces on one machine),
whose figures `benchmarks/results/across_hosts.json` keeps; `make test` runs both:

- `tests/faults/` (`make e2e-faults`): S3, Kafka, two driver hosts and a worker's host; the
  job submitted with `kafkaspark job submit`, its driver a local one on a driver host.
- `tests/cluster/test_airflow_faults_on_bed.py` (`make e2e-cluster`): Airflow's services
  (PostgreSQL, api-server, scheduler, dag-processor, a triggerer, two Edge workers), YARN,
  Kafka and S3 on hosts of their own; the job submitted by a DAG, its driver on YARN.

Each scenario reads the sink `read_committed` at the end, and reads the lease file's history
from the versions S3 kept of it: "lease holders at most" is 2 when a driver wrote the lease
after another had taken it. "duration s" is how long the fault lasted (for the clocks, how
far they were off; for a host lost and booted again, until its service ran again). "recover
s" is the time from the heal to the next committed batch (for the S3 cut, the first batch of
the driver's restart, which took the lease the cut driver had given up); for the pause, from
the pause to the lease's expiry, after which a driver on another host took it; for the
worker lost mid-submit, from the loss to the health wait deferred after the submit's retry
took up the application; for a triggerer lost, from the loss to the deferred task's end; for
the ResourceManager restart, from the crash to the job having read what was written meanwhile.

"""


def render_across_hosts(results_dir: Path = RESULTS) -> str:
    path = results_dir / "across_hosts.json"
    if not path.exists():
        return ACROSS_HOSTS_HEADER + "Not run yet.\n"
    rows = []
    for fault, f in sorted(json.loads(path.read_text()).items()):
        duration = f.get("fault_s", f.get("skew_s", "-"))
        cells = (
            fault,
            f"{duration}",
            f"{f['records']:,}",
            f"{f['duplicates']:,}",
            f"{f['missing']:,}",
            f"{f['holders_at_most']}",
            f"{f.get('recover_s', '-')}",
            f.get("run_at", ""),
        )
        rows.append("| " + " | ".join(str(c) for c in cells) + " |")
    details = "\n".join(
        f"- **{fault}**: " + ", ".join(f"`{k}`={v}" for k, v in sorted(f.items()) if k != "run_at")
        for fault, f in sorted(json.loads(path.read_text()).items())
    )
    return (
        ACROSS_HOSTS_HEADER
        + "| "
        + " | ".join(ACROSS_HOSTS_COLUMNS)
        + " |\n|"
        + "---|" * len(ACROSS_HOSTS_COLUMNS)
        + "\n"
        + "\n".join(rows)
        + "\n\nEvery figure of each scenario:\n\n"
        + details
        + "\n"
    )


def write(results_dir: Path = RESULTS, doc: Path = DOC) -> Path:
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(render(results_dir) + render_across_hosts(results_dir))
    return doc


if __name__ == "__main__":
    print(f"written to {write()}")
