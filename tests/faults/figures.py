"""The scenarios' figures, gathered in `artifacts/across_hosts.json` (one entry per scenario,
the latest run's), from which `docs/reliability.md`'s "Across hosts" table is rendered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIGURES = Path(__file__).resolve().parents[2] / "artifacts" / "across_hosts.json"


def record(scenario: str, **figures: Any) -> None:
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    seen: dict[str, Any] = json.loads(FIGURES.read_text()) if FIGURES.is_file() else {}
    seen[scenario] = figures
    FIGURES.write_text(json.dumps(seen, indent=2, sort_keys=True) + "\n")
    print(f"{scenario}: {json.dumps(figures, sort_keys=True)}")
