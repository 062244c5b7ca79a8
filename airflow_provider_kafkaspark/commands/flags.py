"""Flags a command takes before or after its action, as a person types them:
`kafkaspark savepoint --root R --json list` and `kafkaspark savepoint list --root R --json`.

argparse gives a subcommand's own defaults the last word, which would reset a flag given
before the action; flags declared here have no default (SUPPRESS) at any level, so whichever
level saw the flag sets it, and the readers below supply the default.
"""

from __future__ import annotations

import argparse

from airflow_provider_kafkaspark.errors import InvalidArgumentError


def add_shared(
    parser: argparse.ArgumentParser,
    *,
    json: bool = True,
    root: bool = False,
    kafka_config_file: bool = False,
) -> None:
    if json:
        parser.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
        )
    if root:
        parser.add_argument(
            "--root",
            default=argparse.SUPPRESS,
            help="savepoint root URL (any fsspec URL); required",
        )
    if kafka_config_file:
        parser.add_argument(
            "--kafka-config-file",
            default=argparse.SUPPRESS,
            help="librdkafka settings as key=value lines (keeps passwords off the command line)",
        )


def with_example(parser: argparse.ArgumentParser, *lines: str) -> None:
    """`--help` ends with these command lines."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "example:\n" + "\n".join(f"  {line}" for line in lines)


def wants_json(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def kafka_config_file(args: argparse.Namespace) -> str | None:
    value = getattr(args, "kafka_config_file", None)
    return str(value) if value else None


def savepoint_root(args: argparse.Namespace) -> str:
    value = getattr(args, "root", None)
    if not value:
        raise InvalidArgumentError(
            "savepoint commands need --root (the savepoint root URL), before or after the action"
        )
    return str(value)
