"""The docs' CLI lines for `deploy apply` and `local kafka|s3 start` (in the README,
CONTRIBUTING.md and docs/*.md) name flags the parser has: a flag renamed or dropped fails here
rather than in a reader's terminal."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.cli import build_parser
from kafkaspark_devstack.commands import local as devstack_local

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def options_of(*path: str) -> set[str]:
    parser = build_parser([devstack_local.add_parser])
    for name in path:
        groups = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = groups.choices[name]
    return {option for action in parser._actions for option in action.option_strings}


@pytest.mark.parametrize(
    ("starts", "path"),
    [
        ("kafkaspark deploy apply ", ("deploy", "apply")),
        ("kafkaspark local kafka start", ("local", "kafka")),
        ("kafkaspark local s3 start", ("local", "s3")),
        (".venv/bin/kafkaspark local kafka start", ("local", "kafka")),
        (".venv/bin/kafkaspark local s3 start", ("local", "s3")),
    ],
)
def test_the_docs_command_lines_name_flags_the_parser_has(
    starts: str, path: tuple[str, ...]
) -> None:
    lines = [
        (doc.relative_to(ROOT), line)
        for doc in DOCS
        for line in doc.read_text().splitlines()
        if line.startswith(starts)
    ]
    assert lines, f"no line of README.md, CONTRIBUTING.md or docs/*.md starts {starts!r}"
    known = options_of(*path)
    for doc, line in lines:
        command = line.split("#", 1)[0]
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", command):
            assert flag in known, f"{doc}: {line!r} names {flag}, which {path} lacks"
