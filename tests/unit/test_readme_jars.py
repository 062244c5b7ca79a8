"""The docs' jar list (docs/production.md, moved there from the README) is the one
versions.py gives (what the setup resolves)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.versions import SPARK_LINES
from kafkaspark_devstack.readme_jars import BEGIN, DOC, END, jar_list, main


def test_the_docs_list_the_jars_versions_py_gives() -> None:
    assert jar_list() in DOC.read_text(), (
        "docs/production.md's jar list differs from versions.py: "
        "run python -m kafkaspark_devstack.readme_jars"
    )


def test_every_artifact_of_every_release_is_in_the_list() -> None:
    listed = jar_list()
    for line in SPARK_LINES.values():
        for coordinate in (*line.connector_artifacts(), *line.s3a_artifacts()):
            assert f"`{coordinate}`" in listed


def test_check_finds_a_stale_list_and_the_rewrite_fixes_it(tmp_path: Path) -> None:
    doc = tmp_path / "production.md"
    doc.write_text(f"before\n{BEGIN}\n  - Spark 4.0.0: `hadoop-aws` only\n{END}\nafter\n")
    assert main(["--check", "--doc", str(doc)]) == 1
    assert main(["--doc", str(doc)]) == 0
    assert doc.read_text() == f"before\n{jar_list()}\nafter\n"
    assert main(["--check", "--doc", str(doc)]) == 0


def test_a_doc_without_its_markers_is_named(tmp_path: Path) -> None:
    doc = tmp_path / "production.md"
    doc.write_text("no list here\n")
    with pytest.raises(InvalidInputError, match=r"production\.md: expected one jar list"):
        main(["--doc", str(doc)])
