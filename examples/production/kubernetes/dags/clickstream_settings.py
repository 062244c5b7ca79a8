"""The clickstream job on Kubernetes: its job spec, connections and places, shared by the DAG
files of this folder (which Airflow puts on its Python path). Pure Python: DAG files import it
at parse time, so it imports neither pyspark nor the job's code.

What differs between environments is read from the environment, so one copy of these files
serves each of them; the defaults are placeholders to replace (../../README.md):

    CLICKSTREAM_STATE_URL     where checkpoints, savepoints and backfill output go, a bucket
                              the driver pods and the Airflow workers reach: s3://<bucket>/<prefix>
    CLICKSTREAM_DRIVER_IMAGE  the image ../Dockerfile builds, pushed to your registry
    CLICKSTREAM_PULL_SECRET   the namespace's Secret for that registry ("" when it needs none)

The connections (../connections.env) hold the addresses: Kafka's, the API server's and the
namespace, S3's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from airflow.sdk import Context

JOB_NAME = "clickstream_page_views"
SOURCE_TOPIC = "clickstream.events"
SINK_TOPIC = "clickstream.page_views_per_minute"
# The Spark release of the image: the driver checks its pyspark against it, and a restore
# checks the savepoint's.
SPARK_VERSION = "4.0.0"

# The Airflow connections (../connections.env). Stop and status calls made from a job's
# reference alone (an upgrade's stop, a forced kill) use the cncf provider's default
# connection, so the `kubernetes` connection is that one.
KAFKA_CONN_ID = "kafka_clickstream"
SPARK_CONN_ID = "spark_k8s"
KUBERNETES_CONN_ID = "kubernetes_default"
AWS_CONN_ID = "aws_streaming"

STATE_URL = os.environ.get("CLICKSTREAM_STATE_URL", "s3://example-streaming-state/kafkaspark")
STATE_URL = STATE_URL.rstrip("/")
CHECKPOINT = f"{STATE_URL}/{JOB_NAME}/checkpoint"
SAVEPOINTS = f"{STATE_URL}/{JOB_NAME}/savepoints"
# The backfill's output folder goes to Spark as it is, and Spark's S3 file system (S3A) serves
# `s3a://` URLs only.
BACKFILL_OUTPUT = f"{STATE_URL.replace('s3://', 's3a://', 1)}/{JOB_NAME}/backfill"

DRIVER_IMAGE = os.environ.get(
    "CLICKSTREAM_DRIVER_IMAGE", "registry.example.com/streaming/kafkaspark-driver:4.0.0-1"
)
PULL_SECRET = os.environ.get("CLICKSTREAM_PULL_SECRET", "registry-credentials")

# The job's code: the folder holding the `clickstream` package, relative to this folder (the
# submit resolves it against the DAG file's folder and ships it in the driver's ConfigMap).
JOB_CODE = "../../jobs"
# Tolerations and affinity of the driver pod, which Spark has no settings for; relative to
# this folder as well.
DRIVER_POD_TEMPLATE = "../driver-pod-template.yaml"

# The job's Spark settings, under Spark's own names: the driver pod (the pod of a Kubernetes
# Job) is shaped from them as spark-submit shapes a driver pod, and the driver gives them
# to its executor pods. Sized for a topic of a few partitions; an upgrade runs a second
# driver for a while (the compatibility check, then the warm standby), so leave the
# namespace's quota room for two.
SPARK_CONF = {
    "spark.kubernetes.container.image": DRIVER_IMAGE,
    "spark.kubernetes.container.image.pullPolicy": "IfNotPresent",
    **({"spark.kubernetes.container.image.pullSecrets": PULL_SECRET} if PULL_SECRET else {}),
    # The service account of docs/kubernetes/driver-rbac.yaml (../rbac/driver-rbac.yaml).
    "spark.kubernetes.authenticate.driver.serviceAccountName": "kafkaspark-driver",
    # The driver container: 1 GiB of heap, plus Spark's overhead for a Python application
    # (40%, at least 384 MiB) as its memory request and limit; a quarter of a core
    # requested, at most one used.
    "spark.driver.memory": "1g",
    "spark.kubernetes.driver.request.cores": "250m",
    "spark.kubernetes.driver.limit.cores": "1",
    "spark.kubernetes.driver.label.app.kubernetes.io/name": JOB_NAME,
    "spark.kubernetes.driver.podTemplateFile": DRIVER_POD_TEMPLATE,
    # Driver and executor pods on Linux nodes; name your streaming node pool's label here.
    "spark.kubernetes.node.selector.kubernetes.io/os": "linux",
    # A driver on a node that stopped answering is given up after 60 s (Kubernetes' own
    # default is 300 s), then the Job starts another on a node that answers.
    "spark.kafkaspark.kubernetes.nodeLostAfterSeconds": "60",
    "spark.executor.instances": "1",
    "spark.executor.cores": "1",
    "spark.executor.memory": "1g",
    "spark.kubernetes.executor.request.cores": "250m",
    "spark.kubernetes.executor.limit.cores": "1",
    # The partitions of the job's state (the per-minute counts): fixed by the checkpoint at
    # the first start, so chosen once.
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
