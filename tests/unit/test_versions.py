"""The pins in pyproject.toml agree with the versions the jars are resolved for."""

from __future__ import annotations

from pathlib import Path

import tomllib

from airflow_provider_kafkaspark import get_provider_info
from airflow_provider_kafkaspark.versions import SPARK_CONNECTOR_ARTIFACTS, SPARK_VERSION

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_pyspark_pins_match_the_connector_version() -> None:
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    assert f"pyspark=={SPARK_VERSION}" in deps
    assert f"pyspark-client=={SPARK_VERSION}" in deps
    assert any(
        a.endswith(f"spark-sql-kafka-0-10_2.13:{SPARK_VERSION}") for a in SPARK_CONNECTOR_ARTIFACTS
    )


def test_installed_pyspark_is_the_pinned_one() -> None:
    import pyspark

    assert pyspark.__version__ == SPARK_VERSION
    assert (Path(pyspark.__file__).parent / "jars").is_dir()


def test_provider_entry_point_and_info() -> None:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    entry = project["entry-points"]["apache_airflow_provider"]["provider_info"]
    assert entry == "airflow_provider_kafkaspark:get_provider_info"
    info = get_provider_info()
    assert info["package-name"] == project["name"]
    assert info["versions"] == [project["version"]]
