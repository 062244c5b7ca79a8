"""The README's list of the jars a driver needs, written from `versions.py`: the same lists
`kafkaspark_devstack/jars.py` resolves, so the README cannot name fewer jars than the setup
fetches (it once left out `spark-hadoop-cloud`, and a job built from it failed at start on S3).

    python -m kafkaspark_devstack.readme_jars          # rewrite README.md
    python -m kafkaspark_devstack.readme_jars --check  # exit 1 if stale

`tests/unit/test_readme_jars.py` fails when the README's block differs from this output.
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
README = Path(__file__).resolve().parents[2] / "README.md"
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


def rewritten(readme: str, source: str = "README.md") -> str:
    """`readme` with its block replaced; a typed error when the markers are not there once."""
    if readme.count(BEGIN) != 1 or readme.count(END) != 1:
        raise InvalidInputError(
            f"{source}: expected one jar list between {BEGIN.strip()!r} and {END.strip()!r}"
        )
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + jar_list() + tail


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md is stale")
    parser.add_argument("--readme", type=Path, default=README)
    args = parser.parse_args(argv)
    current = args.readme.read_text()
    wanted = rewritten(current, str(args.readme))
    if wanted == current:
        return 0
    if args.check:
        print(f"{args.readme}: the jar list differs from versions.py: run python -m {_MODULE}")
        return 1
    args.readme.write_text(wanted)
    print(f"{args.readme}: jar list rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
