"""MkDocs hooks of the reference (`mkdocs.yml`, `make docs`): the parts of docs/reference/
made from the code at build time, and the link check.

- `reference/cli.md`: every command, subcommand and flag of `kafkaspark`, with its help,
  from the CLI's argparse parser (`cli.build_parser`), at the `<!-- cli-reference -->` mark.
- `reference/spec-schema.md`: the job spec's fields table and the JSON Schema itself, from
  `core/spec/schema.py`, at the `<!-- spec-fields -->` and `<!-- spec-schema -->` marks; the
  schema is also published as `reference/job-spec.schema.json`.
- Links: a page under docs/ may link to a file of the repository outside docs/
  (`../README.md`, `../dags/`): MkDocs reports such a link as not found among the
  documentation files; when the file or folder exists in the repository that report is
  lowered to INFO, so `mkdocs build --strict` still fails on every other broken link. A
  link MkDocs does not check (a folder) is a warning when nothing is there.
- Without a `docs/index.md`, a generated home page links the pages.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

CLI_MARK = "<!-- cli-reference -->"
FIELDS_MARK = "<!-- spec-fields -->"
SCHEMA_MARK = "<!-- spec-schema -->"
SCHEMA_FILE = "reference/job-spec.schema.json"

log = logging.getLogger("mkdocs.hooks.kafkaspark_reference")

# MkDocs' own wording (mkdocs/structure/pages.py, 1.6) for a relative link it cannot find.
# The target is quoted only when it differs from the link (an anchor, a query, `./`).
_NOT_FOUND = re.compile(
    r"^Doc file '(?P<page>[^']+)' contains a link '(?P<link>[^']*)', but the target"
    r"(?: '(?P<target>[^']+)')? is not found among documentation files\."
)


_UNRECOGNIZED = re.compile(
    r"^Doc file '(?P<page>[^']+)' contains an unrecognized relative link '(?P<link>[^']*)', "
    r"it was left as is\."
)


class _LinksOutOfDocs(logging.Filter):
    """MkDocs' link reports, judged against the repository: a link out of docs/ to a file
    or folder that exists there is lowered from a warning to INFO; a link MkDocs leaves
    unchecked (a folder, `../dags/`) is raised to a warning when nothing is there. Any other
    not-found link stays a warning."""

    def __init__(self, docs_dir: Path) -> None:
        super().__init__()
        self.docs_dir = docs_dir
        self.repository = docs_dir.parent

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        found = _NOT_FOUND.match(message)
        if found is not None and record.levelno == logging.WARNING:
            page = (self.docs_dir / found.group("page")).parent
            if found.group("target"):
                target = (self.docs_dir / found.group("target")).resolve()
            else:
                target = (page / _path_of(found.group("link"))).resolve()
            if not target.is_relative_to(self.docs_dir) and self._exists(target):
                record.levelno, record.levelname = logging.INFO, "INFO"
        unchecked = _UNRECOGNIZED.match(message)
        if unchecked is not None and record.levelno < logging.WARNING:
            page = (self.docs_dir / unchecked.group("page")).parent
            if not self._exists((page / _path_of(unchecked.group("link"))).resolve()):
                record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True

    def _exists(self, target: Path) -> bool:
        return target.is_relative_to(self.repository) and target.exists()


def _path_of(link: str) -> str:
    """A relative link's path, without its anchor or query."""
    return link.split("#", 1)[0].split("?", 1)[0] or "."


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    pages_log = logging.getLogger("mkdocs.structure.pages")
    for old in [f for f in pages_log.filters if isinstance(f, _LinksOutOfDocs)]:
        pages_log.removeFilter(old)  # `mkdocs serve` runs the hooks again on each rebuild
    pages_log.addFilter(_LinksOutOfDocs(Path(config.docs_dir).resolve()))
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, SCHEMA_FILE, content=schema_json()))
    if files.get_file_from_path("index.md") is None:
        files.append(File.generated(config, "index.md", content=home_page(files)))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    uri = page.file.src_uri
    if uri == "reference/cli.md":
        return _filled(markdown, uri, {CLI_MARK: cli_markdown()})
    if uri == "reference/spec-schema.md":
        return _filled(
            markdown,
            uri,
            {FIELDS_MARK: spec_fields_markdown(), SCHEMA_MARK: spec_schema_markdown()},
        )
    return markdown


def _filled(markdown: str, uri: str, parts: dict[str, str]) -> str:
    for mark, text in parts.items():
        if markdown.count(mark) != 1:
            raise PluginError(f"docs/{uri}: expected the mark {mark} once")
        markdown = markdown.replace(mark, text)
    return markdown


def home_page(files: Files) -> str:
    pages = sorted(
        f.src_uri
        for f in files.documentation_pages()
        if "/" not in f.src_uri and f.src_uri != "index.md"
    )
    lines = [
        "# airflow-provider-kafkaspark",
        "",
        "Lifecycle control for Spark Structured Streaming jobs that read Kafka, as an Apache "
        "Airflow provider.",
        "",
        "- [Reference](reference/index.md): connections, operators, sensors, triggers, the "
        "CLI and the job spec, generated from the code.",
    ]
    lines += [f"- [{uri.removesuffix('.md')}]({uri})" for uri in pages]
    return "\n".join(lines) + "\n"


# -- the CLI --------------------------------------------------------------------------------


def cli_markdown() -> str:
    """Every command of `kafkaspark`: this package's, then those other installed
    distributions add (`kafkaspark.cli` entry points: the dev stack's `local`)."""
    from airflow_provider_kafkaspark.cli import build_parser, installed_subcommands

    # argparse wraps usage lines to the terminal's width: the page's is the same everywhere.
    width, os.environ["COLUMNS"] = os.environ.get("COLUMNS"), "100"
    try:
        return _cli_markdown(build_parser, installed_subcommands)
    finally:
        if width is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = width


def _cli_markdown(build_parser: Callable[..., Any], installed: Callable[[], Any]) -> str:
    own = build_parser([])
    everything = build_parser(installed())
    own_names = set(_subcommands(own))
    lines = ["```text", _usage(own), "```", ""]
    if own.description:
        lines += [_text(own.description), ""]
    if own.epilog:
        lines += [_text(own.epilog), ""]
    for name, (parser, help_text) in _subcommands(own).items():
        lines += _command(parser, ["kafkaspark", name], help_text, level=2)
    added = {n: p for n, p in _subcommands(everything).items() if n not in own_names}
    if added:
        lines += [
            "## Added by installed distributions",
            "",
            "Groups that other distributions installed here add through the `kafkaspark.cli` "
            "entry points (the dev stack, `airflow-provider-kafkaspark-devstack`, adds "
            "`local`); the provider's own wheel does not have them.",
            "",
        ]
        for name, (parser, help_text) in added.items():
            lines += _command(parser, ["kafkaspark", name], help_text, level=3)
    return "\n".join(lines).rstrip() + "\n"


def _subcommands(
    parser: argparse.ArgumentParser,
) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """A parser's subcommands in the order they were added, each with its help line."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}
    return {}


def _command(
    parser: argparse.ArgumentParser, path: list[str], help_text: str, level: int
) -> list[str]:
    heading = "#" * min(level, 6)
    lines = [f"{heading} `{' '.join(path)}`", ""]
    if help_text:
        lines += [_text(help_text[0].upper() + help_text[1:]) + ".", ""]
    if parser.description:
        lines += [_text(parser.description), ""]
    lines += ["```text", _usage(parser), "```", ""]
    rows = [_argument_row(a) for a in parser._actions if _documented(a)]
    if rows:
        lines += ["| argument | default | help |", "|---|---|---|", *rows, ""]
    if parser.epilog:
        epilog = parser.epilog.strip()
        if epilog.startswith("example:"):
            examples = [line.strip() for line in epilog.splitlines()[1:] if line.strip()]
            lines += ["Examples:", "", "```bash", *examples, "```", ""]
        else:
            lines += [_text(epilog), ""]
    for name, (sub, sub_help) in _subcommands(parser).items():
        lines += _command(sub, [*path, name], sub_help, level + 1)
    return lines


def _usage(parser: argparse.ArgumentParser) -> str:
    """The usage lines without argparse's `usage: `, continuation lines moved left as far."""
    prefix = "usage: "
    first, *rest = parser.format_usage().rstrip().splitlines()
    shift = " " * len(prefix)
    rest = [line.removeprefix(shift) for line in rest]
    return "\n".join([first.removeprefix(prefix), *rest])


def _documented(action: argparse.Action) -> bool:
    return not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)


def _argument_row(action: argparse.Action) -> str:
    if action.option_strings:
        name = ", ".join(action.option_strings)
        if action.nargs != 0:
            name += f" {_metavar(action)}"
    else:
        name = _metavar(action)
    default = ""
    if action.default not in (None, argparse.SUPPRESS, False) and action.nargs != 0:
        default = f"`{action.default}`"
    if action.required and action.option_strings:
        default = "required"
    help_text = (action.help or "").replace("%(default)s", str(action.default))
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        choices = ", ".join(f"`{c}`" for c in action.choices)
        help_text = f"{help_text} (one of {choices})" if help_text else f"one of {choices}"
    return f"| `{name}` | {default} | {_cell(help_text)} |"


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        base = str(action.metavar)
    elif action.choices is not None:
        base = "{" + ",".join(str(c) for c in action.choices) + "}"
    elif action.option_strings:
        base = action.dest.upper()
    else:
        base = action.dest
    if action.nargs in ("+", "*"):
        return f"{base} [{base} ...]" if action.nargs == "+" else f"[{base} ...]"
    if action.nargs == "?":
        return f"[{base}]"
    return base


def _text(text: str) -> str:
    """Help text as Markdown: argparse's %% as %, and outside code spans `<` and `>` kept
    as text (inside them Markdown does that itself)."""
    return _outside_code(
        text.replace("%%", "%"), lambda t: t.replace("<", "&lt;").replace(">", "&gt;")
    )


def _cell(text: str) -> str:
    """Text for a table cell: one line, and `|` outside code spans escaped (a table does not
    split a row at a `|` inside one)."""
    return _outside_code(_text(" ".join(text.split())), lambda t: t.replace("|", "\\|"))


def _outside_code(text: str, change: Callable[[str], str]) -> str:
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans to keep
        return change(text)
    return "`".join(change(part) if i % 2 == 0 else part for i, part in enumerate(parts))


# -- the job spec ---------------------------------------------------------------------------


def _schema() -> dict[str, Any]:
    from airflow_provider_kafkaspark.core.spec.schema import job_spec_schema

    return job_spec_schema()


def schema_json() -> str:
    return json.dumps(_schema(), indent=2) + "\n"


def spec_schema_markdown() -> str:
    return "```json\n" + schema_json() + "```\n"


def spec_fields_markdown() -> str:
    """A table per object of the spec (the root, then each nested one), a row per field."""
    schema = _schema()
    defs = schema["$defs"]
    sections = [("The spec", "", schema)]
    for name, prop in schema["properties"].items():
        ref = prop.get("$ref", "")
        if ref.startswith("#/$defs/"):
            sections.append((f"`{name}`", f"{name}.", defs[ref.removeprefix("#/$defs/")]))
    lines: list[str] = []
    for title, prefix, node in sections:
        lines += [f"### {title}", ""]
        if node.get("description") and prefix:
            lines += [_text(node["description"]), ""]
        lines += ["| field | type | default | description |", "|---|---|---|---|"]
        for name, prop in node["properties"].items():
            required = name in node.get("required", [])
            default = "required" if required else f"`{json.dumps(prop.get('default'))}`"
            described = prop.get("description", "")
            said = _constraints(prop)
            if said:
                described = f"{described} {said}".strip()
            lines.append(
                f"| `{prefix}{name}` | {_type_of(prop)} | {default} | {_cell(described)} |"
            )
        lines.append("")
    return "\n".join(lines)


def _type_of(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        return "object (below)"
    if "anyOf" in prop and "type" not in prop:
        return " or ".join(_type_of(p) for p in prop["anyOf"])
    kind = prop.get("type")
    if isinstance(kind, list):
        return " or ".join(_type_of({**prop, "type": k}) for k in kind)
    if kind == "array":
        return f"list of {_type_of(prop.get('items', {}))}"
    if kind == "object":
        values = prop.get("additionalProperties")
        return f"object of {_type_of(values)}" if isinstance(values, dict) else "object"
    return str(kind or "any")


def _constraints(prop: dict[str, Any]) -> str:
    """What the schema checks beyond the type, as one sentence."""
    said = _checks(prop)
    return f"{said[0][0].upper()}{'; '.join(said)[1:]}." if said else ""


def _checks(prop: dict[str, Any]) -> list[str]:
    said: list[str] = []
    if "enum" in prop:
        said.append("one of " + ", ".join(f"`{json.dumps(v)}`" for v in prop["enum"]))
    if "pattern" in prop:
        said.append(f"matches `{prop['pattern']}`")
    for key, words in (("minimum", "at least"), ("exclusiveMinimum", "more than")):
        if key in prop:
            said.append(f"{words} {prop[key]}")
    if "maximum" in prop:
        said.append(f"at most {prop['maximum']}")
    if prop.get("minLength") == 1 or prop.get("minItems") == 1:
        said.append("not empty")
    for key, label in (("items", "each item"), ("additionalProperties", "each value")):
        inner = prop.get(key)
        if isinstance(inner, dict) and _checks(inner):
            said.append(f"{label} {', '.join(_checks(inner))}")
    names = prop.get("propertyNames")
    if isinstance(names, dict) and "anyOf" in names:
        said.append("each key " + " or ".join(_alternative(p) for p in names["anyOf"]))
    if "anyOf" in prop:
        if "type" in prop:
            said.append("either " + " or ".join(_alternative(p) for p in prop["anyOf"]))
        else:  # one or many: a list, or one item of it alone
            many = [p for p in prop["anyOf"] if p.get("type") == "array"]
            said += _checks(many[0]) if many else []
    return said


def _alternative(prop: dict[str, Any]) -> str:
    """One branch of an `anyOf`, as words."""
    if "const" in prop:
        return f"`{prop['const']}`"
    if "pattern" in prop:
        return f"matching `{prop['pattern']}`"
    if "enum" in prop:
        return "one of " + ", ".join(f"`{v}`" for v in prop["enum"])
    return _type_of(prop)
