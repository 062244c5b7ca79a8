"""The pins in pyproject.toml agree with the versions the jars are resolved for."""

from __future__ import annotations

from pathlib import Path

import tomllib

import airflow_provider_kafkaspark
from airflow_provider_kafkaspark import get_provider_info
from airflow_provider_kafkaspark.versions import DEFAULT_LINE, HADOOP_VERSION, SPARK_VERSION

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_pyspark_pins_match_the_connector_version() -> None:
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    assert f"pyspark=={SPARK_VERSION}" in deps
    assert f"pyspark-client=={SPARK_VERSION}" in deps
    assert any(
        a.endswith(f"spark-sql-kafka-0-10_2.13:{SPARK_VERSION}")
        for a in DEFAULT_LINE.connector_artifacts()
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
    s3a_artifacts = DEFAULT_LINE.s3a_artifacts()
    assert f"org.apache.hadoop:hadoop-aws:{HADOOP_VERSION}" in s3a_artifacts
    assert any(a.endswith(f"spark-hadoop-cloud_2.13:{SPARK_VERSION}") for a in s3a_artifacts)


def test_provider_entry_point_and_info() -> None:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    entry = project["entry-points"]["apache_airflow_provider"]["provider_info"]
    assert entry == "airflow_provider_kafkaspark:get_provider_info"
    info = get_provider_info()
    assert info["package-name"] == project["name"]
    # The version is read from the package (pyproject's `dynamic`): tests/unit/test_release.py.
    assert info["versions"] == [airflow_provider_kafkaspark.__version__]


def test_each_spark_line_names_the_connector_of_its_scala() -> None:
    from airflow_provider_kafkaspark.versions import spark_line

    three_five = spark_line("3.5.7").connector_artifacts()
    assert three_five[0] == "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7"
    assert "org.apache.kafka:kafka-clients:3.4.1" in three_five
    assert "org.apache.commons:commons-pool2:2.11.1" in three_five
    four = spark_line("4.0.0").connector_artifacts()
    assert four[0] == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0"
    assert "org.apache.kafka:kafka-clients:3.9.0" in four


def test_s3a_of_a_3_5_driver_is_hadoop_3_3_4_with_the_v1_aws_sdk() -> None:
    from airflow_provider_kafkaspark.versions import spark_line

    assert spark_line("3.5.3").s3a_artifacts() == (
        "org.apache.hadoop:hadoop-aws:3.3.4",
        "com.amazonaws:aws-java-sdk-bundle:1.12.262",
        "org.apache.spark:spark-hadoop-cloud_2.12:3.5.3",
    )


def test_an_unsupported_spark_is_a_typed_error_naming_the_supported_ones() -> None:
    import pytest

    from airflow_provider_kafkaspark.errors import InvalidInputError
    from airflow_provider_kafkaspark.versions import spark_line

    with pytest.raises(InvalidInputError, match=r"'3\.5\.5' is not supported.*3\.5\.7.*4\.0\.0"):
        spark_line("3.5.5")
