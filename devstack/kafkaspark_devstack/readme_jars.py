"""The docs' list of the jars a driver needs (docs/production.md, "What the hosts need"),
written from `versions.py`: the same lists `kafkaspark_devstack/jars.py` resolves, so the docs
cannot name fewer jars than the setup fetches (the README's list, where it lived first, once
left out `spark-hadoop-cloud`, and a job built from it failed at start on S3).

    python -m kafkaspark_devstack.readme_jars          # rewrite docs/production.md
    python -m kafkaspark_devstack.readme_jars --check  # exit 1 if stale

`tests/unit/test_readme_jars.py` fails when the block differs from this output.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.versions import SPARK_LINES, SparkLine

BEGIN = (
    "  <!-- jar list: written from versions.py by "
    "`python -m kafkaspark_devstack.readme_jars`; do not edit -->"
)
END = "  <!-- end of the jar list -->"
# The page that holds the list (the README's "Running in production" held it once).
DOC = Path(__file__).resolve().parents[2] / "docs" / "production.md"
_WIDTH = 92
_MODULE = "kafkaspark_devstack.readme_jars"


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _item(line: SparkLine) -> str:
    connector = ", ".join(f"`{c}`" for c in line.connector_artifacts())
    s3 = ", ".join(f"`{c}`" for c in line.s3a_artifacts())
    text = f"Spark {line.spark_version}: {connector}; with state or output on S3 also {s3}"
    # No breaks at hyphens: an artifact name must stay whole for a reader to copy it.
    return textwrap.fill(
        text,
        width=_WIDTH,
        initial_indent="  - ",
        subsequent_indent="    ",
        break_on_hyphens=False,
        break_long_words=False,
    )


def jar_list() -> str:
    """The block between the markers, the newest Spark release first."""
    releases = sorted(SPARK_LINES, key=_release_key, reverse=True)
    return "\n".join([BEGIN, *(_item(SPARK_LINES[v]) for v in releases), END])


def rewritten(doc: str, source: str = "docs/production.md") -> str:
    """`doc` with its block replaced; a typed error when the markers are not there once."""
    if doc.count(BEGIN) != 1 or doc.count(END) != 1:
        raise InvalidInputError(
            f"{source}: expected one jar list between {BEGIN.strip()!r} and {END.strip()!r}"
        )
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + jar_list() + tail


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the list is stale")
    parser.add_argument(
        "--doc", type=Path, default=DOC, help="the Markdown file that holds the list"
    )
    args = parser.parse_args(argv)
    current = args.doc.read_text()
    wanted = rewritten(current, str(args.doc))
    if wanted == current:
        return 0
    if args.check:
        print(f"{args.doc}: the jar list differs from versions.py: run python -m {_MODULE}")
        return 1
    args.doc.write_text(wanted)
    print(f"{args.doc}: jar list rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
