"""One version (SemVer) for a release: `airflow_provider_kafkaspark.__version__` is the source,
pyproject.toml reads it, the provider info lists it, CHANGELOG.md's newest release names it
(Keep a Changelog: `## [Unreleased]` first, then `## [X.Y.Z] - YYYY-MM-DD`, newest first), and
so does the README's install command."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import tomllib
from setuptools.config.pyprojecttoml import read_configuration  # type: ignore[import-untyped]

import airflow_provider_kafkaspark
from airflow_provider_kafkaspark import get_provider_info

ROOT = Path(__file__).resolve().parents[2]
# SemVer 2.0.0's own pattern, without build metadata (a release never carries it).
SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?")
HEADING = re.compile(r"## \[(?P<name>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?")


def changelog_headings() -> list[tuple[str, str | None]]:
    """The `## [...]` headings of CHANGELOG.md in order: (name, date or None)."""
    headings = []
    for line in (ROOT / "CHANGELOG.md").read_text().splitlines():
        if line.startswith("## "):
            match = HEADING.fullmatch(line.rstrip())
            assert match, f"CHANGELOG.md: {line!r} is not '## [X.Y.Z] - YYYY-MM-DD'"
            headings.append((match["name"], match["date"]))
    return headings


def version_key(version: str) -> tuple[int, ...]:
    match = SEMVER.fullmatch(version)
    assert match, version
    return tuple(int(part) for part in match.groups())


def test_the_version_is_semver() -> None:
    assert SEMVER.fullmatch(airflow_provider_kafkaspark.__version__)


def test_pyproject_takes_its_version_from_the_package() -> None:
    raw = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in raw["project"], "one source: the version is dynamic"
    assert raw["project"]["dynamic"] == ["version"]
    assert raw["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "airflow_provider_kafkaspark.__version__"
    }
    # What a build puts into the wheel's metadata, expanded as setuptools expands it.
    built = read_configuration(ROOT / "pyproject.toml")["project"]["version"]
    assert built == airflow_provider_kafkaspark.__version__


def test_the_provider_info_lists_the_version() -> None:
    assert get_provider_info()["versions"] == [airflow_provider_kafkaspark.__version__]


def test_the_newest_release_in_the_changelog_is_this_version() -> None:
    headings = changelog_headings()
    assert headings[0] == ("Unreleased", None), "Keep a Changelog: [Unreleased] comes first"
    releases = headings[1:]
    assert releases, "CHANGELOG.md names no release"
    assert releases[0][0] == airflow_provider_kafkaspark.__version__
    for name, date in releases:
        assert date is not None, f"release {name} has no date"
        datetime.date.fromisoformat(date)
    # Newest first, each release once.
    keys = [version_key(name) for name, _ in releases]
    assert keys == sorted(set(keys), reverse=True)


def test_the_readme_installs_this_version() -> None:
    version = airflow_provider_kafkaspark.__version__
    wheel = f"dist/airflow_provider_kafkaspark-{version}-py3-none-any.whl"
    assert f'pip install "{wheel}[' in (ROOT / "README.md").read_text()
