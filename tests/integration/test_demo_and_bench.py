"""The README's demo and the benchmark harness run to the end against the real stack."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_demo_tells_the_whole_story_with_exactly_once_output() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "airflow_provider_kafkaspark.demo", "--events", "3000"],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads(proc.stdout.split("[demo] summary: ", 1)[1])
    assert summary["events_produced"] == 3001  # plus the event that closes the windows
    assert summary["records_counted"] == 3000
    assert summary["duplicates"] == 0 and summary["missing"] == 0
    assert summary["wrong_counts"] == 0
    assert summary["windows_written"] == summary["windows_expected"] > 0
    assert summary["lag_group_matches_checkpoint"] is True
    # The restart window: a partition added while the job was down is read after it.
    assert summary["partition_added_during_window"] is True
    assert summary["source_partitions_at_end"] == 4
    assert summary["savepoints"] >= 2  # the window's and the final one
    assert summary["reconcile_findings"].get("TOPIC_MISSING", 0) >= 1
    assert summary["backfill_windows"] > 0 and summary["backfill_matches_streaming"] is True
    for dag_id in ("deploy", "restart_window", "reconcile", "backfill"):
        assert f"airflow dags test kafkaspark_{dag_id}" in proc.stdout


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
