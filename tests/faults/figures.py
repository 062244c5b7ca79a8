"""The scenarios' figures, gathered in `artifacts/across_hosts.json` (one entry per scenario,
the latest run's). Copied to `benchmarks/results/across_hosts.json`, they are what
`python -m reliability.report` renders as docs/reliability.md's "Across hosts" table."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

FIGURES = Path(__file__).resolve().parents[2] / "artifacts" / "across_hosts.json"


def record(scenario: str, **figures: Any) -> None:
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    seen: dict[str, Any] = json.loads(FIGURES.read_text()) if FIGURES.is_file() else {}
    seen[scenario] = {**figures, "run_at": time.strftime("%Y-%m-%d", time.gmtime())}
    FIGURES.write_text(json.dumps(seen, indent=2, sort_keys=True) + "\n")
    print(f"{scenario}: {json.dumps(figures, sort_keys=True)}")
