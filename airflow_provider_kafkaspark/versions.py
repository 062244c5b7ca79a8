"""Versions of the JVM parts this package drives, in one place.

`scripts/setup.sh` installs pyspark at `SPARK_VERSION` and resolves the jars below from
Maven Central; the Spark connector must match pyspark exactly or Spark fails at run time
with class errors, so the Spark helper checks it.

Spark 4.0.0 is the newest 4.x whose whole connector (spark-sql-kafka-0-10 *and*
spark-token-provider-kafka-0-10) the Maven Central reachable from our machines serves;
later 4.x token-provider jars were not found there (checked 2026-11 for 4.0.1-4.2.0). Of
3.5, it serves 3.5.3 and 3.5.7. `SPARK_LINES` holds what each supported release needs; the
constants below are those of `SPARK_VERSION`, the one this environment's pyspark is pinned
to.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from airflow_provider_kafkaspark.errors import InvalidInputError


@dataclass(frozen=True)
class SparkLine:
    """What a driver of one Spark release needs beside its pyspark: the Kafka connector
    built for its Scala, the `kafka-clients` and `commons-pool2` its parent pom names, and
    for S3A the `hadoop-aws` of the Hadoop its pyspark ships with the AWS SDK that one was
    built against (read from the poms on Maven Central, 2026-11)."""

    spark_version: str
    scala_binary_version: str
    kafka_clients_version: str
    commons_pool2_version: str
    hadoop_version: str
    aws_sdk_artifact: str
    # Pins a driver environment of this release needs beside `pyspark[sql]==<release>`:
    # pyspark 3.5 takes numpy<2, which pyarrow 26 and pandas 3 refuse (pyarrow 25 takes it,
    # and converts Arrow columns to Python half again as fast as 18: sink_profile).
    driver_pins: tuple[str, ...] = ()

    def connector_artifacts(self) -> tuple[str, ...]:
        """The Spark Kafka connector and what it needs that pyspark does not already ship.
        Listed one by one (not resolved transitively) because Spark's parent pom names an
        extra repository that a machine limited to Maven Central cannot reach."""
        scala, spark = self.scala_binary_version, self.spark_version
        return (
            f"org.apache.spark:spark-sql-kafka-0-10_{scala}:{spark}",
            f"org.apache.spark:spark-token-provider-kafka-0-10_{scala}:{spark}",
            f"org.apache.kafka:kafka-clients:{self.kafka_clients_version}",
            f"org.apache.commons:commons-pool2:{self.commons_pool2_version}",
        )

    def s3a_artifacts(self) -> tuple[str, ...]:
        """What a driver needs to keep its checkpoint on S3 (`s3a://`): Hadoop's S3A file
        system, the AWS SDK bundle it was built with, and Spark's cloud module for its
        abortable-stream checkpoint file manager (writes in place instead of a rename, which
        S3 does not have). One by one, as the connector."""
        return (
            f"org.apache.hadoop:hadoop-aws:{self.hadoop_version}",
            self.aws_sdk_artifact,
            f"org.apache.spark:spark-hadoop-cloud_{self.scala_binary_version}:{self.spark_version}",
        )


# Spark 3.5.7's line; 3.5.3 differs in its own version only (the same Scala, Hadoop and
# connector dependencies).
_SPARK_357 = SparkLine(
    "3.5.7",
    "2.12",
    "3.4.1",
    "2.11.1",
    "3.3.4",
    "com.amazonaws:aws-java-sdk-bundle:1.12.262",
    ("numpy<2", "pyarrow<26", "pandas<3"),
)

# The releases whose whole connector Maven Central serves here (3.5.5 and 3.5.6 lack it).
SPARK_LINES: dict[str, SparkLine] = {
    line.spark_version: line
    for line in (
        SparkLine(
            "4.0.0", "2.13", "3.9.0", "2.12.0", "3.4.1", "software.amazon.awssdk:bundle:2.24.6"
        ),
        _SPARK_357,
        replace(_SPARK_357, spark_version="3.5.3"),
    )
}


def spark_line(spark_version: str) -> SparkLine:
    """The line of a supported Spark release; a typed error naming the supported ones."""
    try:
        return SPARK_LINES[spark_version]
    except KeyError:
        raise InvalidInputError(
            f"Spark {spark_version!r} is not supported: choose one of {sorted(SPARK_LINES)} "
            f"(the releases whose Kafka connector jars resolve from Maven Central)"
        ) from None


# The Spark this environment's pyspark is pinned to (pyproject.toml).
SPARK_VERSION = "4.0.0"
DEFAULT_LINE = spark_line(SPARK_VERSION)
SCALA_BINARY_VERSION = DEFAULT_LINE.scala_binary_version
KAFKA_VERSION = "4.1.1"
# The Hadoop that pyspark's jars/ ships (hadoop-client-api-<version>.jar): hadoop-aws must
# match it exactly, and names the AWS SDK bundle it was built against.
HADOOP_VERSION = DEFAULT_LINE.hadoop_version

# The broker (resolved with its runtime dependencies) plus the command-line tools
# (kafka-consumer-groups and friends) and a log4j binding for slf4j.
KAFKA_BROKER_ARTIFACTS: tuple[str, ...] = (
    f"org.apache.kafka:kafka_{SCALA_BINARY_VERSION}:{KAFKA_VERSION}",
    f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}",
    "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3",
)

# A YARN ResourceManager and NodeManager for the local cluster stack (`kafkaspark local yarn`),
# run from jars: no Hadoop distribution is needed. Both daemons' poms mark hadoop-common (and
# the RM the timeline service) `provided`, and the NodeManager's container executor needs
# hdfs-client's classes, so all five are named. Resolved only on demand (`make setup-cluster`).
YARN_ARTIFACTS: tuple[str, ...] = (
    f"org.apache.hadoop:hadoop-yarn-server-resourcemanager:{HADOOP_VERSION}",
    f"org.apache.hadoop:hadoop-yarn-server-nodemanager:{HADOOP_VERSION}",
    f"org.apache.hadoop:hadoop-yarn-server-timelineservice:{HADOOP_VERSION}",
    f"org.apache.hadoop:hadoop-common:{HADOOP_VERSION}",
    f"org.apache.hadoop:hadoop-hdfs-client:{HADOOP_VERSION}",
)
