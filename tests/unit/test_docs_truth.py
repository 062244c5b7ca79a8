"""README.md, CONTRIBUTING.md and docs/*.md say only what the code has.

- Every `kafkaspark ...` line (fenced or inline code) names subcommands, action words and
  flags the CLI parser has, the dev stack's `local` included; and outside the development
  material (CONTRIBUTING.md, the README's sections about this repository, the docs pages for
  contributors) a `kafkaspark local ...` command is offered only where the text says it is
  the dev stack's.
  "In Airflow"'s backend table has a row per backend kind.
- `ClassName(arg=...)` of an operator or sensor (inline, or a call in a Python example), and
  an `arg=value` span in a paragraph, list item or table row naming such a class, name
  parameters its constructor takes; `operators.x.Class` names exist.
- Every `KAFKASPARK_*` variable the docs name is read somewhere in the source; every list of
  the `driver` extra's packages is the extra's.
- Every Python example compiles, and its imports of this project import.
- Every figure name docs/reliability.md shows is one the reliability code still records.

Each failure names the file, the line and the wrong thing."""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.cli import build_parser
from kafkaspark_devstack.commands import local as devstack_local

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
DOCS = [README, CONTRIBUTING, *sorted((ROOT / "docs").glob("*.md"))]
RELIABILITY_DOC = ROOT / "docs" / "reliability.md"

# Development material: there a `kafkaspark local ...` line is what it says. All of
# CONTRIBUTING.md and the docs pages for contributors (the test tiers, benchmarks, the
# reliability figures, the design notes with their test bed), and the README's sections about
# the repository itself (its quick start on the local stack, the pointer to CONTRIBUTING.md).
# Everywhere else the docs speak to the people who run the provider, so a dev-stack command
# there must say it is one.
DEV_DOCS = {
    CONTRIBUTING,
    *(ROOT / "docs" / name for name in ("testing.md", "benchmarks.md", "reliability.md")),
    ROOT / "docs" / "design.md",
}
DEV_SECTIONS = {"Quick start", "Developing this project"}
SAYS_DEV_STACK = re.compile(r"dev stack|local stack|\./devstack\b", re.I)

# Where the variables a doc names must be read (source text, never the docs themselves).
SOURCE_DIRS = (
    "airflow_provider_kafkaspark",
    "devstack",
    "dags",
    "scripts",
    "benchmarks",
    "reliability",
)
SOURCE_SUFFIXES = {".py", ".sh", ".toml", ".cfg", ".yaml", ".yml", ".go", ".ini"}


# -- reading Markdown ---------------------------------------------------------------------


@dataclass(frozen=True)
class Fenced:
    """A fenced code block: its language and its lines with their line numbers."""

    path: Path
    lang: str
    lines: tuple[tuple[int, str], ...]
    section: str
    before: str  # the prose block right before the fence


@dataclass(frozen=True)
class Block:
    """A prose block: a paragraph, one list item or one table row."""

    path: Path
    line: int
    text: str
    section: str


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def parse(path: Path) -> tuple[list[Fenced], list[Block]]:
    fenced: list[Fenced] = []
    blocks: list[Block] = []
    section = ""
    current: list[tuple[int, str]] = []

    def close() -> None:
        if current:
            blocks.append(Block(path, current[0][0], "\n".join(t for _, t in current), section))
            current.clear()

    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        number, line = i + 1, lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            close()
            lang = stripped[3:].strip()
            body: list[tuple[int, str]] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append((i + 1, lines[i]))
                i += 1
            before = blocks[-1].text if blocks and blocks[-1].line < number else ""
            if blocks and blocks[-1].line + blocks[-1].text.count("\n") < number - 2:
                before = ""  # not right before: a blank line and more between
            fenced.append(Fenced(path, lang, tuple(body), section, before))
            i += 1
            continue
        if line.startswith("## "):
            close()
            section = line[3:].strip()
        elif line.startswith("#"):
            close()
        elif not stripped:
            close()
        elif re.match(r"\s*([-*]|\d+\.)\s", line) or stripped.startswith("|"):
            close()
            current.append((number, line))
            if stripped.startswith("|"):
                close()
        else:
            current.append((number, line))
        i += 1
    close()
    return fenced, blocks


def code_spans(block: Block) -> Iterator[tuple[int, str]]:
    """The inline code spans of a prose block, with the line each starts on."""
    for found in re.finditer(r"`([^`]+)`", block.text):
        yield block.line + block.text.count("\n", 0, found.start()), found.group(1)


# -- (a) command lines --------------------------------------------------------------------

COMMAND = re.compile(r"(?:^|(?<=[\s\"'(`$;&|]))(?:\S*/)?kafkaspark\s+(?=[a-z\[-])")


def commands_in(text: str) -> Iterator[list[str]]:
    """The words after each `kafkaspark` of a shell line or code span, up to the end of that
    command (a comment, a closing `)` or quote, `&&`, `;`, a pipe outside brackets)."""
    for found in COMMAND.finditer(text):
        rest = re.split(r"\s#|&&|;|\)|\"|\s>", text[found.end() :], maxsplit=1)[0]
        words: list[str] = []
        depth = 0
        for word in rest.split():
            if word == "|" and depth == 0:
                break  # a shell pipe
            depth += word.count("[") - word.count("]")
            words.append(word)
        yield words


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a
        for a in parser._actions
        if not a.option_strings and not isinstance(a, argparse._SubParsersAction)
    ]


def option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((a for a in parser._actions if flag in a.option_strings), None)


def check_words(
    words: list[str], parser: argparse.ArgumentParser, path: tuple[str, ...], used: int = 0
) -> Iterator[str]:
    """What in `words` the parser at `path` lacks: a subcommand, an action word of a
    positional with choices, a flag. Placeholders (SPEC.json, ID) and `...` pass; `a|b`
    alternatives are each checked, and each subcommand alternative is walked on its own."""
    where = " ".join(("kafkaspark", *path))
    skip_value = False
    for index, raw in enumerate(words):
        if skip_value:
            skip_value = False
            if not raw.lstrip("[").startswith("-"):
                continue
        word = raw.lstrip("[").rstrip("]")
        alternatives = [w for w in word.split("|") if w and "..." not in w]
        if not alternatives:
            continue
        flags = [w for w in alternatives if w.startswith("-")]
        names = [w for w in alternatives if not w.startswith("-")]
        for flag in flags:
            action = option(parser, flag.split("=", 1)[0])
            if action is None:
                yield f"`{where}` has no flag {flag.split('=', 1)[0]}"
            elif action.nargs != 0 and "=" not in flag:
                skip_value = True
        if not names:
            continue
        choices = subparsers(parser)
        if choices:
            missing = [n for n in names if n not in choices]
            if missing:
                yield f"`{where}` has no subcommand {'|'.join(missing)} (it has {sorted(choices)})"
                return
            for name in names:
                yield from check_words(words[index + 1 :], choices[name], (*path, name))
            return
        slots = positionals(parser)
        if used < len(slots):
            slot = slots[used]
            if slot.choices is not None:
                missing = [n for n in names if n not in slot.choices]
                if missing:
                    yield (
                        f"`{where}` {slot.dest} has no choice {'|'.join(missing)} "
                        f"(it has {list(slot.choices)})"
                    )
            used += 1


@cache
def cli() -> argparse.ArgumentParser:
    return build_parser([devstack_local.add_parser])


@dataclass(frozen=True)
class Command:
    path: Path
    line: int
    text: str
    words: tuple[str, ...]
    section: str
    says_dev_stack: bool


def all_commands() -> Iterator[Command]:
    for doc in DOCS:
        fenced, blocks = parse(doc)
        for fence in fenced:
            if fence.lang == "python":
                continue
            lines = list(fence.lines)
            while lines:
                number, text = lines.pop(0)
                while text.endswith("\\") and lines:  # a continued shell line
                    text = text[:-1] + " " + lines.pop(0)[1]
                for words in commands_in(text):
                    comment = text.split(" #", 1)[1] if " #" in text else ""
                    here = bool(SAYS_DEV_STACK.search(comment + "\n" + fence.before))
                    yield Command(doc, number, text.strip(), tuple(words), fence.section, here)
        for block in blocks:
            for number, span in code_spans(block):
                for words in commands_in(" ".join(span.split())):
                    here = bool(SAYS_DEV_STACK.search(block.text))
                    yield Command(doc, number, span, tuple(words), block.section, here)


def test_the_docs_find_kafkaspark_command_lines() -> None:
    """The matcher sees the lines it is meant to check (a broken one would pass everything)."""
    seen = {(rel(c.path), c.words[:2]) for c in all_commands()}
    for expected in [("job", "stop"), ("deploy", "apply"), ("local", "kafka")]:
        assert ("README.md", expected) in seen, f"README.md: no `kafkaspark {' '.join(expected)}`"
    assert ("CONTRIBUTING.md", ("local", "yarn")) in seen
    assert ("docs/testing.md", ("local", "yarn")) in seen
    assert ("docs/cli.md", ("local", "s3")) in seen


def test_every_kafkaspark_command_line_names_what_the_parser_has() -> None:
    problems = [
        f"{rel(c.path)}:{c.line}: {c.text!r}: {problem}"
        for c in all_commands()
        for problem in check_words(list(c.words), cli(), ())
    ]
    assert not problems, "\n".join(problems)


def is_dev_material(command: Command) -> bool:
    return command.path in DEV_DOCS or (command.path == README and command.section in DEV_SECTIONS)


def test_the_user_docs_offer_no_dev_stack_command_as_a_production_step() -> None:
    problems = [
        f"{rel(c.path)}:{c.line}: {c.text!r} (section {c.section!r}) is a dev stack command "
        f"(`kafkaspark local ...`, `pip install ./devstack`) offered without saying so"
        for c in all_commands()
        if c.words[:1] == ("local",) and not is_dev_material(c) and not c.says_dev_stack
    ]
    assert not problems, "\n".join(problems)


def test_the_readme_s_dev_sections_are_its_titles() -> None:
    """DEV_SECTIONS names sections the README has: a renamed title would silently make its
    dev-stack commands count as production steps, or a new one exempt."""
    titles = {
        line[3:].strip() for line in README.read_text().splitlines() if line.startswith("## ")
    }
    assert DEV_SECTIONS <= titles, f"DEV_SECTIONS {sorted(DEV_SECTIONS - titles)} not in README.md"


def test_the_readme_s_backend_table_has_every_backend() -> None:
    """ "In Airflow"'s table of what the `spark` connection picks has a row per backend kind
    (`backends.BackendKind`), and no other."""
    from airflow_provider_kafkaspark.backends import BackendKind

    lines = README.read_text().splitlines()
    header = next(
        (i for i, line in enumerate(lines) if line.startswith("| connection | backend |")), None
    )
    assert header is not None, "README.md: no table headed `| connection | backend |`"
    rows = []
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[2].strip().strip("`"))
    assert sorted(rows) == sorted(k.value for k in BackendKind), (
        f"README.md:{header + 1}: the backend table's rows {rows}; "
        f"backends.BackendKind has {[k.value for k in BackendKind]}"
    )


# -- (b) operator and sensor arguments ----------------------------------------------------


@cache
def classes() -> dict[str, type]:
    """This provider's operators and sensors by class name."""
    import airflow_provider_kafkaspark.operators as operators
    import airflow_provider_kafkaspark.sensors as sensors

    found: dict[str, type] = {}
    for package in (operators, sensors):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for name, value in vars(module).items():
                if (
                    inspect.isclass(value)
                    and value.__module__ == module.__name__
                    and name.endswith(("Operator", "Sensor"))
                ):
                    found[name] = value
    return found


@cache
def parameters(name: str) -> frozenset[str]:
    """What the class's constructor accepts: its own parameters and, while each `__init__`
    passes `**kwargs` on, those of the classes it passes them to (BaseOperator's)."""
    accepted: set[str] = set()
    for klass in classes()[name].__mro__:
        if "__init__" not in vars(klass):
            continue
        params = inspect.signature(vars(klass)["__init__"]).parameters.values()
        accepted |= {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return frozenset(accepted - {"self"})


KEYWORD = re.compile(r"(?<![\w.])([a-z_][a-z0-9_]*)\s*=(?!=)")
ARG_MENTION = re.compile(r"([a-z_][a-z0-9_]*)=\S.*", re.S)
QUALIFIED = re.compile(r"\b(operators|sensors|triggers)\.(\w+)\.([A-Z]\w+)")


def call_keywords(text: str, name: str) -> Iterator[str]:
    """The `arg=` names of each `name(...)` call written in `text` (top level of the call)."""
    for found in re.finditer(rf"(?<![\w]){name}\(", text):
        depth, args = 1, []
        for char in text[found.end() :]:
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0:
                break
            args.append(char if depth == 1 else " ")
        yield from KEYWORD.findall("".join(args))


def test_operator_and_sensor_arguments_in_the_docs_are_parameters_of_the_class() -> None:
    problems = []
    names = classes()
    for doc in DOCS:
        fenced, blocks = parse(doc)
        for block in blocks:
            named = [n for n in names if re.search(rf"\b{n}\b", block.text)]
            for number, span in code_spans(block):
                for found in QUALIFIED.finditer(span):
                    package, module, klass = found.groups()
                    target = f"airflow_provider_kafkaspark.{package}.{module}"
                    try:
                        ok = hasattr(importlib.import_module(target), klass)
                    except ImportError:
                        ok = False
                    if not ok:
                        problems.append(f"{rel(doc)}:{number}: `{found.group()}` does not exist")
                for name in named:
                    for keyword in call_keywords(span, name):
                        if keyword not in parameters(name):
                            problems.append(
                                f"{rel(doc)}:{number}: `{span}`: {name} has no "
                                f"parameter {keyword!r}"
                            )
                mention = ARG_MENTION.fullmatch(span)
                if named and mention and not any(mention.group(1) in parameters(n) for n in named):
                    problems.append(
                        f"{rel(doc)}:{number}: `{span}` next to {', '.join(named)}: none "
                        f"of them has a parameter {mention.group(1)!r}"
                    )
        for fence in fenced:
            if fence.lang != "python" or not fence.lines:
                continue
            try:
                tree = ast.parse("\n".join(t for _, t in fence.lines))
            except SyntaxError:
                continue  # test_every_python_example_compiles names it
            first = fence.lines[0][0]
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name not in names:
                    continue
                for given in node.keywords:
                    if given.arg is not None and given.arg not in parameters(name):
                        problems.append(
                            f"{rel(doc)}:{first + given.lineno - 1}: {name} has no "
                            f"parameter {given.arg!r}"
                        )
    assert not problems, "\n".join(problems)


def test_the_argument_matcher_sees_the_readme_s_mentions() -> None:
    _, blocks = parse(README)
    spans = [span for block in blocks for _, span in code_spans(block)]
    assert "SubmitStreamingJobOperator(standby=True)" in spans
    assert list(call_keywords("X(a=1, b=f(c=2), d='=')", "X")) == ["a", "b", "d"]
    assert "warm_handover" in parameters("DeployStreamingJobOperator")
    assert "task_id" in parameters("StreamingWatchSensor")
    assert "handover_from" in parameters("RestoreStreamingJobOperator")


# -- (c) environment variables ------------------------------------------------------------


@cache
def source_text() -> str:
    texts = [(ROOT / "Makefile").read_text()]
    for folder in SOURCE_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            if (
                path.is_file()
                and path.suffix in SOURCE_SUFFIXES
                and not any(p.endswith(".egg-info") or p == "__pycache__" for p in path.parts)
            ):
                texts.append(path.read_text(errors="replace"))
    return "\n".join(texts)


def test_every_kafkaspark_variable_in_the_docs_is_read_by_the_code() -> None:
    problems = []
    for doc in DOCS:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for name in re.findall(r"KAFKASPARK_[A-Z0-9_]+", line):
                # `KAFKASPARK_SECRET_...` names a family: its prefix must be in the code.
                pattern = re.escape(name) + ("" if name.endswith("_") else r"(?![A-Z0-9_])")
                if not re.search(pattern, source_text()):
                    problems.append(
                        f"{rel(doc)}:{number}: {name} is read nowhere in {', '.join(SOURCE_DIRS)} "
                        f"or the Makefile"
                    )
    assert not problems, "\n".join(problems)


def test_the_driver_extra_s_packages_are_listed_as_pyproject_has_them() -> None:
    """Where a doc lists the `driver` extra's packages (what a driver's node or image needs),
    the list is the extra's, as pyproject.toml declares it."""
    # Read as text: tomllib is Python 3.11's, and this package supports 3.10.
    declared = re.search(
        r"^driver = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(), re.S | re.M
    )
    assert declared, "pyproject.toml: no `driver` extra"
    extra = {
        re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower()
        for r in re.findall(r'^\s*"([^"]+)"', declared.group(1), re.M)
    }
    problems: list[str] = []
    lists = 0
    for doc in DOCS:
        text = doc.read_text()
        for found in re.finditer(r"`driver`\s+extra(?:'s\s+packages)?\s+\(([^)]*)\)", text):
            lists += 1
            listed = {
                n.strip().lower() for n in re.split(r",|\band\b", found.group(1)) if n.strip()
            }
            if listed != extra:
                problems.append(
                    f"{rel(doc)}:{text.count(chr(10), 0, found.start()) + 1}: the `driver` extra "
                    f"listed as {sorted(listed)}; pyproject.toml has {sorted(extra)}"
                )
    assert lists >= 3, f"the docs list the `driver` extra's packages {lists} times, not 3"
    assert not problems, "\n".join(problems)


# -- (d) Python examples ------------------------------------------------------------------

OWN_PACKAGES = ("airflow_provider_kafkaspark", "kafkaspark_devstack")


def python_examples() -> list[Fenced]:
    return [f for doc in DOCS for f in parse(doc)[0] if f.lang == "python"]


def test_the_docs_have_python_examples() -> None:
    assert len(python_examples()) >= 4


@pytest.mark.parametrize(
    "fence", python_examples(), ids=lambda f: f"{rel(f.path)}:{f.lines[0][0] if f.lines else 0}"
)
def test_every_python_example_compiles_and_imports(fence: Fenced) -> None:
    where = f"{rel(fence.path)}:{fence.lines[0][0]}"
    source = "\n".join(text for _, text in fence.lines)
    try:
        tree = compile(source, where, "exec", flags=ast.PyCF_ONLY_AST)
    except SyntaxError as exc:
        line = fence.lines[0][0] + (exc.lineno or 1) - 1
        pytest.fail(f"{rel(fence.path)}:{line}: the Python example does not compile: {exc.msg}")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(OWN_PACKAGES):
            statement = ast.unparse(node)
        elif isinstance(node, ast.Import) and any(
            a.name.startswith(OWN_PACKAGES) for a in node.names
        ):
            statement = ast.unparse(node)
        else:
            continue
        try:
            exec(statement, {})
        except ImportError as exc:
            line = fence.lines[0][0] + node.lineno - 1
            pytest.fail(f"{rel(fence.path)}:{line}: `{statement}` fails: {exc}")


# -- docs/reliability.md's figures ---------------------------------------------------------


@cache
def recorded_names() -> tuple[re.Pattern[str], ...]:
    """Every string the reliability code and the across-hosts tests write, as a pattern: a
    plain literal as itself, an f-string with a word for each of its fields."""
    patterns: set[str] = set()
    for folder in ("reliability", "tests/faults", "tests/cluster"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    patterns.add(re.escape(node.value))
                elif isinstance(node, ast.JoinedStr):
                    fixed = [
                        p.value
                        for p in node.values
                        if isinstance(p, ast.Constant) and isinstance(p.value, str)
                    ]
                    if sum(c.isalnum() for c in "".join(fixed)) < 4:
                        continue  # f"{a}_{b}" would match any name
                    patterns.add(
                        "".join(
                            re.escape(part.value)
                            if isinstance(part, ast.Constant) and isinstance(part.value, str)
                            else "[a-z0-9]+"
                            for part in node.values
                        )
                    )
                elif isinstance(node, ast.keyword) and node.arg:
                    patterns.add(re.escape(node.arg))  # dict(name=...), Figures(name=...)
    return tuple(re.compile(p) for p in patterns)


def test_the_reliability_figures_are_ones_the_code_records() -> None:
    """docs/reliability.md is rendered from results JSON: a figure the scenarios no longer
    record (renamed, or the fact it counted gone) is a stale run's, not what the code says."""
    doc = RELIABILITY_DOC
    problems = []
    for number, line in enumerate(doc.read_text().splitlines(), 1):
        if not line.startswith("- **"):
            continue
        for name in re.findall(r"`([a-z][a-z0-9_]*)`=", line):
            if not any(p.fullmatch(name) for p in recorded_names()):
                problems.append(
                    f"{rel(doc)}:{number}: figure {name!r} is recorded nowhere in "
                    f"reliability/, tests/faults/ or tests/cluster/ (a stale run's name)"
                )
    assert not problems, "\n".join(problems)
