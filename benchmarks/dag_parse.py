"""Parse time of each example DAG file in Airflow's DagBag, after Airflow itself is
imported (what the DAG processor pays per file), median of several parses."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

DAGS = Path(__file__).resolve().parents[1] / "dags"


def run(repeat: int = 5) -> dict[str, Any]:
    import airflow.sdk  # noqa: F401 - warm: Airflow's own import is not the DAG's cost
    from airflow.models.dagbag import DagBag

    figures: dict[str, Any] = {}
    for path in sorted(DAGS.glob("*.py")):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            bag = DagBag(dag_folder=str(path))
            times.append((time.perf_counter() - start) * 1000)
            if bag.import_errors:
                raise RuntimeError(f"{path.name}: {bag.import_errors}")
        figures[path.stem] = {
            "parse_ms_median": round(statistics.median(times), 1),
            "first_parse_ms": round(times[0], 1),
        }
    return figures
