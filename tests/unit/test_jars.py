"""Locating Java and the resolved jars; the generated Maven poms."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.errors import JarsNotFoundError, JavaNotFoundError
from airflow_provider_kafkaspark.spark.jars import (
    JARS_DIR_ENV,
    connector_bundle,
    find_java,
    s3a_bundle,
)
from kafkaspark_devstack import jars
from kafkaspark_devstack.jars import _pom, bundle_jars


def fake_java(folder: Path, version_line: str) -> Path:
    """A stand-in `java` that only prints a version banner (pure logic under test)."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True)
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return java


def test_java_home_without_java_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match=f"JAVA_HOME={tmp_path} has no bin/java"):
        find_java()


def test_no_java_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match="no `java` on PATH"):
        find_java()


@pytest.mark.parametrize(
    ("banner", "major"),
    [('openjdk version "1.8.0_392"', 8), ('openjdk version "11.0.2" 2019-01-15', 11)],
)
def test_old_java_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, banner: str, major: int
) -> None:
    fake_java(tmp_path, banner)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match=f"Java {major} at .* is too old"):
        find_java()


def test_java_17_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    java = fake_java(tmp_path, 'openjdk version "17.0.15" 2025-04-15')
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert find_java() == java


def test_missing_bundle_names_folder_and_fix(tmp_path: Path) -> None:
    with pytest.raises(JarsNotFoundError) as err:
        bundle_jars("kafka", tmp_path)
    assert str(tmp_path / "kafka") in str(err.value)
    assert "make setup" in str(err.value)


def test_bundle_resolved_for_other_versions_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "spark-kafka-4.0.0"
    folder.mkdir()
    (folder / "x.jar").write_bytes(b"")
    (folder / ".complete.json").write_text(json.dumps({"artifacts": ["a:b:0.1"]}))
    with pytest.raises(JarsNotFoundError, match="resolved for"):
        bundle_jars("spark-kafka-4.0.0", tmp_path)


def test_complete_bundle_lists_its_jars(tmp_path: Path) -> None:
    folder = tmp_path / "spark-kafka-4.0.0"
    folder.mkdir()
    for name in ("b.jar", "a.jar"):
        (folder / name).write_bytes(b"")
    artifacts = list(jars.BUNDLES["spark-kafka-4.0.0"][0])
    (folder / ".complete.json").write_text(json.dumps({"artifacts": artifacts}))
    assert [p.name for p in bundle_jars("spark-kafka-4.0.0", tmp_path)] == ["a.jar", "b.jar"]


def test_jars_dir_env_overrides_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(JARS_DIR_ENV, str(tmp_path))
    assert jars.default_jars_dir() == tmp_path
    monkeypatch.delenv(JARS_DIR_ENV)
    assert jars.default_jars_dir().parts[-2:] == (".cache", "jars")


def test_an_installed_package_keeps_jars_in_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(JARS_DIR_ENV, raising=False)
    installed = tmp_path / "site-packages" / "kafkaspark_devstack" / "jars.py"
    monkeypatch.setattr(jars, "__file__", str(installed))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert jars.default_jars_dir() == tmp_path / "cache" / "kafkaspark" / "jars"


def test_pom_excludes_transitive_dependencies_only_when_asked() -> None:
    flat = _pom("x", ("g:a:1", "g:b:2"), transitive=False)
    deep = _pom("x", ("g:a:1",), transitive=True)
    assert flat.count("<exclusion>") == 2 and "<version>2</version>" in flat
    assert "<exclusion>" not in deep


def test_resolve_without_mvn_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JarsNotFoundError, match="`mvn` is not on PATH"):
        jars.resolve_jars(tmp_path / "cache")
    assert not (tmp_path / "cache").exists() or not os.listdir(tmp_path / "cache")


def test_each_spark_release_has_its_own_connector_and_s3a_bundles() -> None:
    assert jars.BUNDLES[connector_bundle("3.5.7")][0][0] == (
        "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7"
    )
    assert jars.BUNDLES[s3a_bundle("3.5.7")][0][0] == "org.apache.hadoop:hadoop-aws:3.3.4"
    # setup resolves this environment's Spark only; another one is asked for by name.
    assert jars.DEFAULT_BUNDLES == ("kafka", "spark-kafka-4.0.0", "s3a-4.0.0")
    assert "spark-kafka-3.5.7" in jars.BUNDLES and "spark-kafka-3.5.7" not in jars.DEFAULT_BUNDLES
