"""`kafkaspark`: the package's capabilities for a person at a terminal.

Exit codes: 0 done; 1 the system answered badly (Kafka unreachable, a live lease, ...);
2 bad input (a file, URL, id or argument is wrong); 3 the command worked and found
something that needs a person (a failed verification, blocking reconcile findings,
dead bootstrap servers).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from airflow_provider_kafkaspark.commands import checkpoint, job, kafka, local, savepoint
from airflow_provider_kafkaspark.commands.output import EXIT_BAD_INPUT, EXIT_ERROR
from airflow_provider_kafkaspark.errors import InvalidInputError, KafkaSparkError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafkaspark",
        description="Lifecycle control for Spark Structured Streaming jobs that read Kafka.",
        epilog="exit codes: 0 ok, 1 error, 2 bad input, 3 findings",
    )
    groups = parser.add_subparsers(dest="group", required=True)
    for module in (local, job, checkpoint, savepoint, kafka):
        module.add_parser(groups)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except InvalidInputError as exc:
        print(f"kafkaspark: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KafkaSparkError as exc:
        print(f"kafkaspark: error: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
