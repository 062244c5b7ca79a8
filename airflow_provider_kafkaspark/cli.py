"""`kafkaspark`: the package's capabilities for a person at a terminal.

Exit codes: 0 done; 1 the system answered badly (Kafka unreachable, a live lease, ...);
2 bad input (a file, URL, id or argument is wrong); 3 the command worked and found
something that needs a person (a failed verification, blocking reconcile findings,
dead bootstrap servers).

Other distributions add subcommand groups through the `kafkaspark.cli` entry-point group
(each entry: a function that adds its parser to the subcommands): the dev stack
(`devstack/`, `airflow-provider-kafkaspark-devstack`) adds `kafkaspark local ...` that way,
so this package never imports it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from airflow_provider_kafkaspark.commands import checkpoint, deploy, job, kafka, savepoint, spec
from airflow_provider_kafkaspark.commands.output import EXIT_BAD_INPUT, EXIT_ERROR
from airflow_provider_kafkaspark.errors import InvalidInputError, KafkaSparkError

CLI_PLUGIN_GROUP = "kafkaspark.cli"

AddParser = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def installed_subcommands() -> list[AddParser]:
    """The subcommand groups other installed distributions register (`kafkaspark.cli`), by
    entry name; one entry point installed twice (two copies on the path) counts once."""
    from importlib.metadata import entry_points

    found = {ep.value: ep for ep in entry_points(group=CLI_PLUGIN_GROUP)}
    return [ep.load() for ep in sorted(found.values(), key=lambda ep: (ep.name, ep.value))]


def build_parser(extra: Sequence[AddParser] | None = None) -> argparse.ArgumentParser:
    """The CLI's parser with its own groups and `extra` (default: the installed ones)."""
    parser = argparse.ArgumentParser(
        prog="kafkaspark",
        description="Lifecycle control for Spark Structured Streaming jobs that read Kafka.",
        epilog="exit codes: 0 ok, 1 error, 2 bad input, 3 findings",
    )
    groups = parser.add_subparsers(dest="group", required=True)
    for add_parser in installed_subcommands() if extra is None else extra:
        add_parser(groups)
    for module in (job, deploy, spec, checkpoint, savepoint, kafka):
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
