"""Run the reliability scenarios and write their figures.

    python -m reliability.run --profile short|long [--only name,name] [--storage local|s3]
                              [--results-dir DIR]

`--storage s3` runs the scenarios that support it (`STORAGES` in their module) with their
checkpoint and savepoints on a real S3 server; their figures are named `<scenario>[s3]`.

Writes `<results-dir>/reliability_<profile>.json` (scenarios run by an earlier call with
`--only` are kept unless run again) and, for the repository's results folder, renders
docs/reliability.md from it. Exit code 0 when every scenario run passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import tempfile
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kafkaspark_devstack.jars import use_default_jars_dir
from reliability import report
from reliability.model import Profile, ScenarioResult
from reliability.scenarios import available, load, run_name, storages


def run_one(name: str, profile: Profile, workdir: Path, storage: str = "local") -> ScenarioResult:
    module = load(name)
    if storage not in storages(name):
        raise ValueError(f"scenario {name} runs on {', '.join(storages(name))}, not {storage}")
    started = time.monotonic()
    label = run_name(name, storage)
    print(f"[reliability] === {label}: {module.TITLE}", flush=True)
    try:
        extra = {} if storage == "local" else {"storage": storage}
        result: ScenarioResult = module.run(profile, workdir, **extra)
    except Exception as exc:  # noqa: BLE001 - a crashed scenario is a failed scenario
        traceback.print_exc()
        result = ScenarioResult(name=name, title=module.TITLE)
        result.failures.append(f"scenario raised {type(exc).__name__}: {exc}"[:2000])
    result.name = label
    result.seconds = round(time.monotonic() - started, 1)
    result.finish()
    print(
        f"[reliability] === {label}: {'pass' if result.passed else 'FAIL'} "
        f"({json.dumps({k: v for k, v in result.to_dict().items() if k != 'checks'})})",
        flush=True,
    )
    return result


def write_results(
    profile: Profile,
    results: list[ScenarioResult],
    results_dir: Path,
    previous: dict[str, Any] | None = None,
) -> Path:
    """`<results_dir>/reliability_<profile>.json`: these results over `previous` ones."""
    merged = {**(previous or {}), **{r.name: r.to_dict() for r in results}}
    payload = {
        "suite": "reliability",
        "profile": asdict(profile),
        "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "scenarios": list(merged.values()),
    }
    results_dir.mkdir(parents=True, exist_ok=True)
    out = report.results_file(profile.name, results_dir)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="short", choices=("short", "long"))
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    parser.add_argument("--storage", default="local", choices=("local", "s3"))
    parser.add_argument("--results-dir", type=Path, default=report.RESULTS)
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)
    # The drivers and servers the scenarios start read their jars from this setting.
    use_default_jars_dir()
    profile = Profile.named(args.profile)
    names = [n for n in args.only.split(",") if n] or [
        n for n in available() if args.storage in storages(n)
    ]

    earlier = report.results_file(profile.name, args.results_dir)
    previous: dict[str, Any] = {}
    # A run of some scenarios (by name, or those that run on S3) adds to the figures of
    # the others rather than replacing them.
    if earlier.exists() and (args.only or args.storage != "local"):
        previous = {s["name"]: s for s in json.loads(earlier.read_text())["scenarios"]}
    results: list[ScenarioResult] = []
    work = Path(tempfile.mkdtemp(prefix="kafkaspark-reliability-"))
    try:
        for name in names:
            (work / name).mkdir()
            results.append(run_one(name, profile, work / name, args.storage))
    finally:
        if not args.keep:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
    out = write_results(profile, results, args.results_dir, previous)
    print(f"[reliability] figures written to {out}")
    if args.results_dir.resolve() == report.RESULTS.resolve():
        print(f"[reliability] table written to {report.write()}")
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
