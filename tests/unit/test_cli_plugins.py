"""The production CLI imports no dev stack: `kafkaspark local ...` comes from the dev stack's
distribution through the `kafkaspark.cli` entry-point group."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest

from airflow_provider_kafkaspark import cli
from kafkaspark_devstack.commands import local as devstack_local


def test_the_cli_with_the_devstack_registered_has_its_local_commands() -> None:
    parser = cli.build_parser([devstack_local.add_parser])
    args = parser.parse_args(["local", "kafka", "status", "--dir", "x"])
    assert args.group == "local" and args.part == "kafka" and args.dir == "x"
    # The CLI's own groups are all still there.
    assert parser.parse_args(["job", "status", "--checkpoint", "c"]).group == "job"


def test_entry_points_of_the_group_are_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = EntryPoint(
        name="local",
        value="kafkaspark_devstack.commands.local:add_parser",
        group=cli.CLI_PLUGIN_GROUP,
    )

    def entry_points(*, group: str) -> list[EntryPoint]:
        return [entry, entry] if group == cli.CLI_PLUGIN_GROUP else []

    monkeypatch.setattr("importlib.metadata.entry_points", entry_points)
    assert cli.installed_subcommands() == [devstack_local.add_parser]
    args = cli.build_parser().parse_args(["local", "jars", "resolve"])
    assert args.part == "jars"


def test_without_the_devstack_there_is_no_local_group() -> None:
    parser = cli.build_parser([])
    with pytest.raises(SystemExit):
        parser.parse_args(["local", "kafka", "status"])


def test_importing_the_cli_loads_no_devstack_module() -> None:
    code = (
        "import sys, airflow_provider_kafkaspark.cli as c; c.build_parser([]); "
        "print(sorted(m for m in sys.modules if m.startswith('kafkaspark_devstack')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
