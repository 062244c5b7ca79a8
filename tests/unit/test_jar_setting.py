"""The jar folder is an explicit setting (`KAFKASPARK_JARS_DIR`, or a folder a caller gives):
a missing folder, or one lacking an artifact of the connector set, is a typed error naming
the setting and what is missing; the dev stack's cache is only the dev stack's default."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_kafkaspark.errors import JarsNotFoundError, JarsSettingError
from airflow_provider_kafkaspark.spark import jars
from airflow_provider_kafkaspark.spark.jars import (
    JARS_DIR_ENV,
    jar_file_name,
    s3a_jars,
    spark_connector_jars,
)
from airflow_provider_kafkaspark.versions import spark_line
from kafkaspark_devstack.jars import default_jars_dir, use_default_jars_dir


def complete_set(root: Path, bundle: str, artifacts: tuple[str, ...]) -> list[Path]:
    folder = root / bundle
    folder.mkdir(parents=True)
    paths = [folder / jar_file_name(a) for a in artifacts]
    for path in paths:
        path.write_bytes(b"")
    return sorted(paths)


def test_an_unset_setting_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JARS_DIR_ENV, raising=False)
    with pytest.raises(JarsSettingError, match=f"{JARS_DIR_ENV} is not set.*spark.jars"):
        spark_connector_jars()


def test_a_setting_naming_a_missing_folder_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere"
    monkeypatch.setenv(JARS_DIR_ENV, str(missing))
    with pytest.raises(JarsSettingError) as err:
        spark_connector_jars(spark_version="4.0.0")
    assert f"{JARS_DIR_ENV}={missing}" in str(err.value)
    assert "does not exist" in str(err.value)
    # Callers that catch the broader error still do.
    assert isinstance(err.value, JarsNotFoundError)


def test_a_folder_lacking_an_artifact_names_it_and_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    artifacts = spark_line("4.0.0").connector_artifacts()
    complete_set(tmp_path, "spark-kafka-4.0.0", artifacts)
    (tmp_path / "spark-kafka-4.0.0" / jar_file_name(artifacts[2])).unlink()
    monkeypatch.setenv(JARS_DIR_ENV, str(tmp_path))
    with pytest.raises(JarsSettingError) as err:
        spark_connector_jars(spark_version="4.0.0")
    assert f"{JARS_DIR_ENV}={tmp_path}" in str(err.value)
    assert artifacts[2] in str(err.value) and jar_file_name(artifacts[2]) in str(err.value)


def test_a_folder_given_by_the_caller_is_named_as_such(tmp_path: Path) -> None:
    with pytest.raises(JarsSettingError, match=f"jars_dir={tmp_path}: .* lacks"):
        s3a_jars(tmp_path, "4.0.0")


def test_complete_sets_are_found_from_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = spark_line("3.5.7")
    connector = complete_set(tmp_path, "spark-kafka-3.5.7", line.connector_artifacts())
    s3a = complete_set(tmp_path, "s3a-3.5.7", line.s3a_artifacts())
    monkeypatch.setenv(JARS_DIR_ENV, str(tmp_path))
    assert spark_connector_jars(spark_version="3.5.7") == connector
    assert s3a_jars(spark_version="3.5.7") == s3a


def test_jar_file_names_are_mavens() -> None:
    assert jar_file_name("org.apache.kafka:kafka-clients:3.9.0") == "kafka-clients-3.9.0.jar"


def test_production_has_no_default_the_dev_stack_sets_its_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(JARS_DIR_ENV, raising=False)
    with pytest.raises(JarsSettingError):
        jars.jars_setting()
    assert use_default_jars_dir() == default_jars_dir()
    assert jars.jars_setting()[1] == f"{JARS_DIR_ENV}={default_jars_dir()}"


def test_the_dev_stack_keeps_a_setting_already_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(JARS_DIR_ENV, str(tmp_path))
    assert use_default_jars_dir() == tmp_path
