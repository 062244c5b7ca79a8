"""The pins in pyproject.toml agree with the versions the jars are resolved for."""

from __future__ import annotations

from pathlib import Path

import tomllib

from airflow_provider_kafkaspark import get_provider_info
from airflow_provider_kafkaspark.versions import (
    HADOOP_VERSION,
    S3A_ARTIFACTS,
    SPARK_CONNECTOR_ARTIFACTS,
    SPARK_VERSION,
)

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


def test_hadoop_aws_matches_the_hadoop_that_pyspark_ships() -> None:
    """hadoop-aws must be the Hadoop of pyspark's own client jars, or S3A fails with class
    errors at run time."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    shipped = sorted(p.name for p in jars.glob("hadoop-client-api-*.jar"))
    assert shipped == [f"hadoop-client-api-{HADOOP_VERSION}.jar"]
    assert f"org.apache.hadoop:hadoop-aws:{HADOOP_VERSION}" in S3A_ARTIFACTS
    assert any(a.endswith(f"spark-hadoop-cloud_2.13:{SPARK_VERSION}") for a in S3A_ARTIFACTS)


def test_provider_entry_point_and_info() -> None:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    entry = project["entry-points"]["apache_airflow_provider"]["provider_info"]
    assert entry == "airflow_provider_kafkaspark:get_provider_info"
    info = get_provider_info()
    assert info["package-name"] == project["name"]
    assert info["versions"] == [project["version"]]
