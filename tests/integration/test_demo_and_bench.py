"""The benchmark harness runs to the end against the real stack (the README demo is run by
tests/e2e/test_example_dags.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_benchmark_harness_writes_figures(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run.py"),
            "broker_throughput",
            "--param",
            "records=5000",
            "--results-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "broker_throughput.json").read_text())
    figures = result["figures"]
    assert result["params"] == {"records": "5000"}
    assert figures["records"] == 5000
    assert figures["produce_records_per_s"] > 0 and figures["consume_records_per_s"] > 0
