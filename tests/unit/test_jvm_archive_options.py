"""When the local stack adds the fast-start JVM options, and when an archive counts as stale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.spark.fast_jvm import C1_ONLY, FAST_JVM_ENV, fast_java_options
from kafkaspark_devstack import jvm_archive
from kafkaspark_devstack.jvm_archive import archive_is_current, archive_path


def test_no_options_unless_asked_for(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(FAST_JVM_ENV, raising=False)
    assert fast_java_options("spark", tmp_path / "jars") == []
    monkeypatch.setenv(FAST_JVM_ENV, "0")
    assert fast_java_options("kafka", tmp_path / "jars") == []


def test_c1_only_without_an_archive_and_the_archive_once_built(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(FAST_JVM_ENV, "1")
    jars = tmp_path / "jars"
    assert fast_java_options("spark", jars) == [C1_ONLY]
    archive = archive_path("spark", jars)
    assert archive.parent == tmp_path / "jvm"
    archive.parent.mkdir()
    archive.write_bytes(b"")
    assert fast_java_options("spark", jars) == [C1_ONLY, f"-XX:SharedArchiveFile={archive}"]
    # One archive per kind: the broker's is not the driver's.
    assert fast_java_options("kafka", jars) == [C1_ONLY]


def test_an_archive_built_for_another_jvm_or_jars_is_stale(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = {"java": "/usr/bin/java", "java_version": "17.0.15", "jars": "/x/jars"}
    monkeypatch.setattr(jvm_archive, "archive_key", lambda kind, jars_dir=None: dict(key))
    jars = tmp_path / "jars"
    archive = archive_path("kafka", jars)
    archive.parent.mkdir()
    assert not archive_is_current("kafka", jars)  # nothing built
    archive.write_bytes(b"archive")
    assert not archive_is_current("kafka", jars)  # built, but no record of what for
    archive.with_suffix(".json").write_text(json.dumps(key))
    assert archive_is_current("kafka", jars)
    archive.with_suffix(".json").write_text(json.dumps({**key, "java_version": "21.0.1"}))
    assert not archive_is_current("kafka", jars)
