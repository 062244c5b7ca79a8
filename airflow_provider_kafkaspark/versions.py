"""Versions of the JVM parts this package drives, in one place.

`scripts/setup.sh` installs pyspark at `SPARK_VERSION` and resolves the jars below from
Maven Central; the Spark connector must match pyspark exactly or Spark fails at run time
with class errors, so the Spark helper checks it.

Spark 4.0.0 is the newest 4.x whose whole connector (spark-sql-kafka-0-10 *and*
spark-token-provider-kafka-0-10) the Maven Central reachable from our machines serves;
later 4.x token-provider jars were not found there (checked 2026-11 for 4.0.1-4.2.0).
"""

from __future__ import annotations

SPARK_VERSION = "4.0.0"
SCALA_BINARY_VERSION = "2.13"
KAFKA_VERSION = "4.1.1"
# The Hadoop that pyspark's jars/ ships (hadoop-client-api-<version>.jar): hadoop-aws must
# match it exactly, and names the AWS SDK v2 bundle it was built against.
HADOOP_VERSION = "3.4.1"
AWS_SDK_BUNDLE_VERSION = "2.24.6"

# The Spark Kafka connector and what it needs that pyspark does not already ship.
# Listed one by one (not resolved transitively) because Spark's parent pom names an extra
# repository that a machine limited to Maven Central cannot reach.
SPARK_CONNECTOR_ARTIFACTS: tuple[str, ...] = (
    f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY_VERSION}:{SPARK_VERSION}",
    f"org.apache.spark:spark-token-provider-kafka-0-10_{SCALA_BINARY_VERSION}:{SPARK_VERSION}",
    "org.apache.kafka:kafka-clients:3.9.0",
    "org.apache.commons:commons-pool2:2.12.0",
)

# The broker (resolved with its runtime dependencies) plus the command-line tools
# (kafka-consumer-groups and friends) and a log4j binding for slf4j.
KAFKA_BROKER_ARTIFACTS: tuple[str, ...] = (
    f"org.apache.kafka:kafka_{SCALA_BINARY_VERSION}:{KAFKA_VERSION}",
    f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}",
    "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3",
)

# What a driver needs to keep its checkpoint on S3 (`s3a://`): Hadoop's S3A file system, the
# AWS SDK bundle it was built with, and Spark's cloud module for its abortable-stream
# checkpoint file manager (writes in place instead of a rename, which S3 does not have).
# Listed one by one for the same reason as the connector.
S3A_ARTIFACTS: tuple[str, ...] = (
    f"org.apache.hadoop:hadoop-aws:{HADOOP_VERSION}",
    f"software.amazon.awssdk:bundle:{AWS_SDK_BUNDLE_VERSION}",
    f"org.apache.spark:spark-hadoop-cloud_{SCALA_BINARY_VERSION}:{SPARK_VERSION}",
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
