"""Which error text means a missing jar, and which artifact of versions.py provides it."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.spark.missing_class import (
    PACKAGES,
    Missing,
    find_missing,
    line_artifacts,
    providing_artifact,
    unversioned,
)
from airflow_provider_kafkaspark.versions import SPARK_LINES

# Texts as pyspark gives them (Spark 4.0.0, seen on this machine).
NO_ABORTABLE = (
    "An error occurred while calling o44.start.\n: java.lang.ClassNotFoundException: "
    "org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager\n\tat "
    "java.base/java.net.URLClassLoader.findClass(URLClassLoader.java:445)\n"
)
NO_KAFKA = (
    "Failed to find data source: kafka. Please deploy the application as per the deployment "
    "section of Structured Streaming + Kafka Integration Guide."
)


@pytest.mark.parametrize("version", sorted(SPARK_LINES))
def test_every_artifact_versions_py_lists_has_its_packages(version: str) -> None:
    for coordinate in line_artifacts(SPARK_LINES[version]):
        assert unversioned(coordinate) in PACKAGES, coordinate


def test_a_missing_checkpoint_manager_names_spark_hadoop_cloud() -> None:
    missing = find_missing(NO_ABORTABLE, "4.0.0")
    assert missing == Missing(
        "class",
        "org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager",
        "org.apache.spark:spark-hadoop-cloud_2.13:4.0.0",
    )
    assert "org.apache.spark:spark-hadoop-cloud_2.13:4.0.0" in missing.describe()
    assert "\n" not in missing.describe()


def test_the_artifact_is_the_one_of_the_drivers_spark() -> None:
    missing = find_missing(NO_KAFKA, "3.5.7")
    assert missing is not None and missing.kind == "data source" and missing.name == "kafka"
    assert missing.artifact == "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7"


@pytest.mark.parametrize(
    ("text", "kind", "name", "artifact"),
    [
        (
            "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: `kafka`. Make sure",
            "data source",
            "kafka",
            "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0",
        ),
        (
            "java.lang.NoClassDefFoundError: org/apache/kafka/common/serialization/Deserializer",
            "class",
            "org.apache.kafka.common.serialization.Deserializer",
            "org.apache.kafka:kafka-clients:3.9.0",
        ),
        (
            "Caused by: java.lang.ClassNotFoundException: software.amazon.awssdk.core.SdkClient",
            "class",
            "software.amazon.awssdk.core.SdkClient",
            "software.amazon.awssdk:bundle:2.24.6",
        ),
        (
            'org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for scheme "s3a"',
            "file system for scheme",
            "s3a",
            "org.apache.hadoop:hadoop-aws:3.4.1",
        ),
        (
            "java.lang.ClassNotFoundException: org.apache.spark.kafka010.KafkaConfigUpdater",
            "class",
            "org.apache.spark.kafka010.KafkaConfigUpdater",
            "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.0.0",
        ),
        (
            "java.lang.ClassNotFoundException: com.example.udf.Thing",
            "class",
            "com.example.udf.Thing",
            None,
        ),
        ("Failed to find data source: delta. Please find", "data source", "delta", None),
    ],
)
def test_what_was_missing_and_its_jar(
    text: str, kind: str, name: str, artifact: str | None
) -> None:
    assert find_missing(text, "4.0.0") == Missing(kind, name, artifact)


@pytest.mark.parametrize(
    "text",
    [
        "Table or view not found: source",
        "java.lang.NoClassDefFoundError: Could not initialize class",
        "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node",
    ],
)
def test_other_errors_are_not_a_missing_jar(text: str) -> None:
    assert find_missing(text, "4.0.0") is None


def test_an_unknown_release_falls_back_to_this_packages_spark() -> None:
    assert providing_artifact("com/amazonaws/AmazonClientException", SPARK_LINES["3.5.3"]) == (
        "com.amazonaws:aws-java-sdk-bundle:1.12.262"
    )
    missing = find_missing(NO_KAFKA, "9.9.9")
    assert missing is not None and missing.artifact is not None
    assert missing.artifact.endswith(":4.0.0")
    no_jar = Missing("class", "com.example.X", None).describe()
    assert "no jar this package knows provides it" in no_jar


def test_the_driver_ends_a_missing_jar_as_a_bad_job_naming_the_jar() -> None:
    from airflow_provider_kafkaspark.spark.managed import describe_error, is_bad_job
    from airflow_provider_kafkaspark.spark.missing_class import running_spark

    error = RuntimeError(NO_ABORTABLE + "\tat " * 500)
    assert is_bad_job(error)
    line = SPARK_LINES[running_spark() or "4.0.0"]
    report = describe_error(error)
    assert (
        line.s3a_artifacts()[-1] in report and "AbortableStreamBasedCheckpointFileManager" in report
    )
    assert "\n" not in report and report.endswith("(RuntimeError)")
    assert not is_bad_job(RuntimeError("java.net.ConnectException: Connection refused"))


def test_an_analysis_error_is_reported_without_the_plan_spark_appends() -> None:
    from airflow_provider_kafkaspark.spark.managed import describe_error

    text = (
        "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with "
        "name `no_such_column` cannot be resolved. Did you mean one of the following? "
        "[`key`, `value`]. SQLSTATE: 42703; line 1 pos 7;\n"
        "'Project ['no_such_column AS value#1]\n"
        "+- SubqueryAlias source\n"
        "   +- View (`source`, [key#7, value#8])\n"
    )
    report = describe_error(ValueError(text))
    assert report.endswith("SQLSTATE: 42703; line 1 pos 7"), report
    assert "Project" not in report and "no_such_column" in report
    assert describe_error(ValueError("two\nlines")) == "ValueError: two\nlines"
