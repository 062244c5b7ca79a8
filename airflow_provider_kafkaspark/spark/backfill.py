"""A bounded batch run of a job's transformation over an exact offset range.

    python -m airflow_provider_kafkaspark.spark.backfill --spec job.json \
        --starting-offsets '{"t":{"0":10}}' --ending-offsets '{"t":{"0":20}}' \
        --output /path/interval=... [--master 'local[2]']

The output folder of an interval is replaced as a whole (Spark's overwrite), so re-running
an interval replaces its output and never adds a second copy. Prints one JSON line with the
rows written.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Sequence

if __package__ in (None, ""):
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.spark.secrets import load_job_spec

log = logging.getLogger("kafkaspark.backfill")
EXIT_BAD_INPUT = 4


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--starting-offsets", required=True)
    parser.add_argument("--ending-offsets", required=True)
    parser.add_argument("--output", required=True, help="folder of this interval's output")
    parser.add_argument("--master", default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)
    try:
        spec = load_job_spec(args.spec)
        source = dataclasses.replace(
            spec.source,
            starting_offsets=args.starting_offsets,
            ending_offsets=args.ending_offsets,
        )
        spec = dataclasses.replace(spec, source=source).validate()
    except InvalidInputError as exc:
        log.error("%s", exc)
        return EXIT_BAD_INPUT

    from airflow_provider_kafkaspark.spark.query import load_transformation, source_frame
    from airflow_provider_kafkaspark.spark.runner import build_session

    spark = build_session(spec, args.master)
    try:
        frame = load_transformation(spec)(source_frame(spark, spec, streaming=False)).cache()
        rows = frame.count()
        frame.write.mode("overwrite").parquet(args.output)
    finally:
        spark.stop()
    print(json.dumps({"output": args.output, "rows": rows}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
