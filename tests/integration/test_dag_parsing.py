"""The example DAG files load in Airflow's DagBag without errors and without importing
pyspark or confluent_kafka (parse time is reported by benchmarks/dag_parse.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import airflow.sdk
from airflow.models.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
print(json.dumps({
    "dag_ids": sorted(bag.dag_ids),
    "errors": {k: str(v) for k, v in bag.import_errors.items()},
    "heavy": sorted(m for m in ("pyspark", "confluent_kafka") if m in sys.modules),
}))
"""


def test_example_dags_parse_without_heavy_imports(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "dags")],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env={"AIRFLOW_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["errors"] == {}
    assert result["dag_ids"] == [
        "kafkaspark_backfill",
        "kafkaspark_deploy",
        "kafkaspark_periodic_savepoint",
        "kafkaspark_reconcile",
        "kafkaspark_restart_window",
        "kafkaspark_stop",
        "kafkaspark_watch",
    ]
    assert result["heavy"] == []
