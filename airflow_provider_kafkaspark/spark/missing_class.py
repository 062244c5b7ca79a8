"""A query that cannot start because a jar is missing: which class (or data source, or file
system) Spark did not find, and which Maven artifact provides it.

A missing class never heals on a restart: the next driver gets the same jars. So a query
whose start fails on one is a bad job (`spark.managed.is_bad_job`), and its stopped report
names the artifact to add. The artifacts are the ones `versions.py` lists for each Spark
release (what `make setup` resolves and docs/production.md's jar list shows); this module only knows
which Java packages each of them holds. Pure functions over the error's text: no pyspark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from airflow_provider_kafkaspark.versions import DEFAULT_LINE, SPARK_LINES, SparkLine

# The Java packages of each artifact `versions.SparkLine` names, keyed by group:artifact
# without the Scala suffix (`_2.13`). A unit test fails when versions.py gains an artifact
# that has no entry here.
PACKAGES: dict[str, tuple[str, ...]] = {
    "org.apache.spark:spark-sql-kafka-0-10": ("org.apache.spark.sql.kafka010.",),
    "org.apache.spark:spark-token-provider-kafka-0-10": ("org.apache.spark.kafka010.",),
    "org.apache.kafka:kafka-clients": ("org.apache.kafka.",),
    "org.apache.commons:commons-pool2": ("org.apache.commons.pool2.",),
    "org.apache.hadoop:hadoop-aws": ("org.apache.hadoop.fs.s3a.",),
    "com.amazonaws:aws-java-sdk-bundle": ("com.amazonaws.",),
    "software.amazon.awssdk:bundle": ("software.amazon.awssdk.",),
    "org.apache.spark:spark-hadoop-cloud": ("org.apache.spark.internal.io.cloud.",),
}
# Names Spark resolves to a class of one of those artifacts.
DATA_SOURCES: dict[str, str] = {"kafka": "org.apache.spark:spark-sql-kafka-0-10"}
FILE_SYSTEMS: dict[str, str] = {"s3a": "org.apache.hadoop:hadoop-aws"}

# How the JVM and Spark word a missing piece. A Py4JJavaError's text holds the Java stack
# trace with its "Caused by:" chain; the first match names what was missing.
_CLASS = re.compile(
    r"(?:ClassNotFoundException|NoClassDefFoundError):\s*([A-Za-z_$][\w$]*(?:[./][\w$]+)+)"
)
_DATA_SOURCE = re.compile(r"Failed to find (?:the )?data source:\s*`?([\w.]+?)`?\.?(?:\s|$)")
_SCALA_SUFFIX = re.compile(r"_2\.\d+$")
_FILE_SYSTEM = re.compile(r'No FileSystem for scheme[:\s]*"?(\w+)"?')


@dataclass(frozen=True)
class Missing:
    kind: str  # "class", "data source", "file system for scheme"
    name: str
    artifact: str | None  # the Maven coordinate that provides it, None when not known

    def describe(self) -> str:
        """One line for the stopped report and the driver's log."""
        what = f"{self.kind} {self.name!r} not found"
        if self.artifact is None:
            return (
                f"missing jar: {what}; no jar this package knows provides it: add the jar that "
                f"does to the job's jars (spark.jars, or the submit operator's `jars`)"
            )
        return (
            f"missing jar: {what}; it is in {self.artifact}: add that jar to the job's jars "
            f"(spark.jars, or the submit operator's `jars`) or install it in the cluster's Spark"
        )


def unversioned(coordinate: str) -> str:
    """`group:artifact` without the Scala suffix: the key of `PACKAGES`."""
    group, artifact = coordinate.split(":")[:2]
    return f"{group}:{_SCALA_SUFFIX.sub('', artifact)}"


def line_artifacts(line: SparkLine) -> tuple[str, ...]:
    return (*line.connector_artifacts(), *line.s3a_artifacts())


def package_table(line: SparkLine) -> list[tuple[str, str]]:
    """(package prefix, artifact coordinate) for a Spark release, longest prefix first."""
    rows = [(prefix, c) for c in line_artifacts(line) for prefix in PACKAGES[unversioned(c)]]
    return sorted(rows, key=lambda row: -len(row[0]))


def _coordinate(key: str, line: SparkLine) -> str | None:
    return next((c for c in line_artifacts(line) if unversioned(c) == key), None)


def providing_artifact(class_name: str, line: SparkLine) -> str | None:
    """The artifact of `line` whose packages hold `class_name` (dots or slashes)."""
    dotted = class_name.replace("/", ".")
    return next((c for prefix, c in package_table(line) if dotted.startswith(prefix)), None)


def find_missing(text: str, spark_version: str | None = None) -> Missing | None:
    """What the error `text` says was not found, with the artifact of `spark_version`'s line
    (this package's default Spark when the release is not one it knows)."""
    line = SPARK_LINES.get(spark_version or "", DEFAULT_LINE)
    source = _DATA_SOURCE.search(text)
    if source:
        name = source.group(1)
        key = DATA_SOURCES.get(name.lower())
        return Missing("data source", name, _coordinate(key, line) if key else None)
    scheme = _FILE_SYSTEM.search(text)
    if scheme:
        name = scheme.group(1)
        key = FILE_SYSTEMS.get(name.lower())
        return Missing("file system for scheme", name, _coordinate(key, line) if key else None)
    found = _CLASS.search(text)
    if found:
        name = found.group(1).replace("/", ".")
        return Missing("class", name, providing_artifact(name, line))
    return None


def running_spark() -> str | None:
    """The Spark of this driver's pyspark, None where pyspark is not installed."""
    try:
        import pyspark
    except ImportError:
        return None
    return str(pyspark.__version__)
