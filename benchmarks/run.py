"""Run a named benchmark and write its figures as JSON under benchmarks/results/.

    python benchmarks/run.py broker_throughput [--param key=value ...]

A benchmark is a module in this folder with `run(**params) -> dict` of figures. Ratios
between variants are taken inside one run, on one machine, never across runs; timings are
reported, never asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import platform
import sys
from pathlib import Path

from kafkaspark_devstack.jars import use_default_jars_dir

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def _coerce(value: str) -> object:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def _pyspark_version() -> str | None:
    """The Spark a benchmark that drives Spark ran on (its interpreter's pyspark)."""
    try:
        import pyspark
    except ImportError:
        return None
    return str(pyspark.__version__)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", help="benchmark module in benchmarks/")
    parser.add_argument("--param", action="append", default=[], help="key=value for run()")
    parser.add_argument("--results-dir", type=Path, default=RESULTS, help="where the JSON goes")
    parser.add_argument(
        "--suffix", default="", help="added to the file name, e.g. spark-3.5.7 for another leg"
    )
    args = parser.parse_args(argv)
    params = dict(p.split("=", 1) for p in args.param)
    # The drivers and servers the benchmarks start read their jars from this setting.
    use_default_jars_dir()

    sys.path.insert(0, str(HERE))
    module = importlib.import_module(args.name)
    started = dt.datetime.now(dt.timezone.utc)
    figures = module.run(**{k: _coerce(v) for k, v in params.items()})
    result = {
        "benchmark": args.name,
        "started_at": started.isoformat(timespec="seconds"),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "pyspark": _pyspark_version(),
        },
        "params": params,
        "figures": figures,
    }
    args.results_dir.mkdir(parents=True, exist_ok=True)
    out = args.results_dir / f"{args.name}{'_' + args.suffix if args.suffix else ''}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
