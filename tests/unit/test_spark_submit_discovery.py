"""Which spark-submit a YARN submit from the CLI runs, decided over folders made here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.commands.spark_submit import find_spark_submit, spark_binary_of
from airflow_provider_kafkaspark.errors import InvalidInputError


def binary_in(folder: Path, name: str = "spark-submit", executable: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755 if executable else 0o644)
    return path


def find(tmp_path: Path, binary: str = "spark-submit", **given: object) -> tuple[Path, str]:
    options: dict[str, object] = {
        "spark_home_flag": None,
        "spark_home_env": None,
        "path_env": str(tmp_path / "empty-path"),
        "python_bin": tmp_path / "venv" / "bin",
        "pyspark_home": tmp_path / "site" / "pyspark",
        **given,
    }
    found = find_spark_submit(binary, **options)  # type: ignore[arg-type]
    return found.path, found.source


def test_named_folders_first_then_path_then_the_environments_pyspark(tmp_path: Path) -> None:
    pyspark = binary_in(tmp_path / "site" / "pyspark" / "bin")
    assert find(tmp_path) == (pyspark, "the installed pyspark")
    beside = binary_in(tmp_path / "venv" / "bin")
    assert find(tmp_path)[0] == beside
    on_path = binary_in(tmp_path / "path-bin")
    path_env = os.pathsep.join([str(tmp_path / "nothing"), str(tmp_path / "path-bin")])
    assert find(tmp_path, path_env=path_env) == (on_path, "PATH")
    home = binary_in(tmp_path / "spark" / "bin")
    assert find(tmp_path, path_env=path_env, spark_home_env=str(tmp_path / "spark")) == (
        home,
        "SPARK_HOME",
    )
    flag = binary_in(tmp_path / "flag-spark" / "bin")
    chosen = find(
        tmp_path,
        path_env=path_env,
        spark_home_env=str(tmp_path / "spark"),
        spark_home_flag=str(tmp_path / "flag-spark"),
    )
    assert chosen == (flag, "--spark-home")


def test_none_found_is_one_line_naming_where_it_looked(tmp_path: Path) -> None:
    binary_in(tmp_path / "venv" / "bin", executable=False)  # not runnable: not a candidate
    with pytest.raises(InvalidInputError) as missing:
        find(tmp_path)
    message = str(missing.value)
    assert "\n" not in message and message.startswith("spark-submit not found")
    assert str(tmp_path / "venv" / "bin" / "spark-submit") in message
    assert "--spark-home" in message and "SPARK_HOME" in message


def test_a_named_spark_without_the_binary_is_refused_not_skipped(tmp_path: Path) -> None:
    binary_in(tmp_path / "site" / "pyspark" / "bin")
    (tmp_path / "spark").mkdir()
    with pytest.raises(InvalidInputError, match=r"^SPARK_HOME .*spark: no executable bin/"):
        find(tmp_path, spark_home_env=str(tmp_path / "spark"))
    with pytest.raises(InvalidInputError, match=r"^--spark-home .*: no executable bin/spark3"):
        find(tmp_path, "spark3-submit", spark_home_flag=str(tmp_path / "spark"))


def test_the_connection_extras_the_official_hook_refuses() -> None:
    assert spark_binary_of("s", {}) == "spark-submit"
    assert spark_binary_of("s", {"spark-binary": "spark3-submit"}) == "spark3-submit"
    with pytest.raises(InvalidInputError, match="'s': the official Spark provider refuses"):
        spark_binary_of("s", {"spark-home": "/opt/spark"})
    with pytest.raises(InvalidInputError, match="'/opt/spark/bin/spark-submit' is not one of"):
        spark_binary_of("s", {"spark-binary": "/opt/spark/bin/spark-submit"})
