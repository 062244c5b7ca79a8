"""The CLI's shared flags go before or after the action, and every command's help shows an
example (parsing only: nothing runs)."""

from __future__ import annotations

import argparse

import pytest

from airflow_provider_kafkaspark.cli import build_parser, main
from airflow_provider_kafkaspark.commands.flags import kafka_config_file, savepoint_root, wants_json


@pytest.mark.parametrize(
    "argv",
    [
        ["savepoint", "--root", "/sp", "--json", "list"],
        ["savepoint", "list", "--root", "/sp", "--json"],
        ["savepoint", "--json", "list", "--root", "/sp"],
        ["savepoint", "--root", "/sp", "list", "--json"],
    ],
)
def test_savepoint_flags_before_or_after_the_action(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert savepoint_root(args) == "/sp"
    assert wants_json(args)


def test_json_is_off_unless_given() -> None:
    args = build_parser().parse_args(["savepoint", "--root", "/sp", "list"])
    assert not wants_json(args)


@pytest.mark.parametrize(
    "argv",
    [
        ["checkpoint", "--json", "inspect", "/cp"],
        ["checkpoint", "inspect", "/cp", "--json"],
    ],
)
def test_checkpoint_json_before_or_after(argv: list[str]) -> None:
    assert wants_json(build_parser().parse_args(argv))


@pytest.mark.parametrize(
    "argv",
    [
        ["kafka", "--kafka-config-file", "f.properties", "--json", "probe-bootstrap",
         "--bootstrap-servers", "b:9092"],
        ["kafka", "probe-bootstrap", "--bootstrap-servers", "b:9092",
         "--kafka-config-file", "f.properties", "--json"],
    ],
)  # fmt: skip
def test_kafka_config_file_before_or_after(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert kafka_config_file(args) == "f.properties"
    assert wants_json(args)


def test_a_missing_root_is_bad_input_that_names_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["savepoint", "list"]) == 2
    assert "need --root" in capsys.readouterr().err


def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += leaves(sub, (*path, name))
    return found or [path]


def test_every_command_help_shows_an_example() -> None:
    commands = leaves(build_parser())
    assert ("savepoint", "list") in commands and ("kafka", "probe-bootstrap") in commands
    for command in commands:
        parser = build_parser()
        for name in command:
            sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            parser = sub.choices[name]
        help_text = parser.format_help()
        assert "example:\n  kafkaspark " + command[0] in help_text, command
