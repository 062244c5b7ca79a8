"""The clickstream job on YARN: its job spec, connections and places, shared by the DAG files
of this folder (which Airflow puts on its Python path). Pure Python: DAG files import it at
parse time, so it imports neither pyspark nor the job's code.

What differs between environments is read from the environment, so one copy of these files
serves each of them; the defaults are placeholders to replace (../../README.md):

    CLICKSTREAM_STATE_URL  where checkpoints, savepoints and backfill output go, a bucket
                           every host reaches: s3://<bucket>/<prefix>
    CLICKSTREAM_JARS       the jars a submit names (spark-submit --jars): by default the
                           Kafka connector's and S3A's, installed on every YARN node at
                           /opt/kafkaspark/jars (`local:` paths: nothing is uploaded)

The connections (../connections.env) hold the addresses: Kafka's, the ResourceManager's, S3's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from airflow.sdk import Context

JOB_NAME = "clickstream_page_views"
SOURCE_TOPIC = "clickstream.events"
SINK_TOPIC = "clickstream.page_views_per_minute"
# The Spark release of the cluster: the driver checks its pyspark against it, and a restore
# checks the savepoint's.
SPARK_VERSION = "4.0.0"

# The Airflow connections (../connections.env).
KAFKA_CONN_ID = "kafka_clickstream"
SPARK_CONN_ID = "spark_yarn"
AWS_CONN_ID = "aws_streaming"

STATE_URL = os.environ.get("CLICKSTREAM_STATE_URL", "s3://example-streaming-state/kafkaspark")
STATE_URL = STATE_URL.rstrip("/")
CHECKPOINT = f"{STATE_URL}/{JOB_NAME}/checkpoint"
SAVEPOINTS = f"{STATE_URL}/{JOB_NAME}/savepoints"
# The backfill's output folder goes to Spark as it is, and Spark's S3 file system (S3A) serves
# `s3a://` URLs only.
BACKFILL_OUTPUT = f"{STATE_URL.replace('s3://', 's3a://', 1)}/{JOB_NAME}/backfill"

# The job's code: the folder holding the `clickstream` package, relative to this folder (the
# submit resolves it against the DAG file's folder and ships it with every submit).
JOB_CODE = "../../jobs"

# The Kafka connector of Spark 4.0.0 and, for the checkpoint on S3, S3A and Spark's cloud
# module (docs/production.md lists each release's), installed on every node.
NODE_JARS_DIR = "/opt/kafkaspark/jars"
NODE_JARS = (
    "spark-sql-kafka-0-10_2.13-4.0.0.jar",
    "spark-token-provider-kafka-0-10_2.13-4.0.0.jar",
    "kafka-clients-3.9.0.jar",
    "commons-pool2-2.12.0.jar",
    "hadoop-aws-3.4.1.jar",
    "bundle-2.24.6.jar",
    "spark-hadoop-cloud_2.13-4.0.0.jar",
)
JARS = os.environ.get("CLICKSTREAM_JARS") or ",".join(
    f"local:{NODE_JARS_DIR}/{name}" for name in NODE_JARS
)

# The job's Spark settings (the cluster's spark-defaults.conf has the rest: ../spark-settings.md).
# Sized for a topic of a few partitions and some thousand clicks a second; an upgrade runs a
# second application for a while (the compatibility check, then the warm standby), so leave
# the queue room for two.
SPARK_CONF = {
    "spark.driver.memory": "1g",
    "spark.driver.cores": "1",
    "spark.executor.instances": "1",
    "spark.executor.cores": "2",
    "spark.executor.memory": "1g",
    # A stream keeps its executors: dynamic allocation would take them away between batches.
    "spark.dynamicAllocation.enabled": "false",
    # The partitions of the job's state (the per-minute counts): fixed by the checkpoint at
    # the first start, so chosen once, about twice the executors' cores.
    "spark.sql.shuffle.partitions": "4",
}


def job_spec() -> dict[str, Any]:
    """The job as the deploy and the restart window run it (a new dict each time)."""
    return {
        "job_name": JOB_NAME,
        "source": {
            # A submit replaces it with the `kafka` connection's bootstrap.servers.
            "bootstrap_servers": "from-the-kafka-connection:9092",
            "subscribe": [SOURCE_TOPIC],
            "starting_offsets": "earliest",
            # Bounds the batch after an outage: the backlog is worked off in steps.
            "max_offsets_per_trigger": 100_000,
        },
        "transformation": "clickstream.sessions:page_views_per_minute",
        "python_path": [JOB_CODE],
        "sink": {"kind": "kafka_exactly_once", "topic": SINK_TOPIC, "output_mode": "append"},
        "checkpoint_location": CHECKPOINT,
        "trigger_interval": "15 seconds",
        "spark_version": SPARK_VERSION,
        "spark_conf": dict(SPARK_CONF),
    }


def job_code_on_pythonpath(context: Context) -> None:
    """`on_execute_callback` of the backfill task: its batch driver is a process of the worker
    that runs the task, and imports the job's module from the worker's Python path (a
    backfill does not ship `python_path` as a submit does). The variable is the task
    process's own; the driver it starts inherits it."""
    folder = str((Path(__file__).parent / JOB_CODE).resolve())
    given = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([folder, given] if given else [folder])
