"""Deploy the clickstream job on Kubernetes: make the running job the one
`clickstream_settings` describes, and wait until it is healthy.

Nothing running: a submit (the driver as the pod of a Kubernetes Job in the `spark_k8s`
connection's namespace, its executors as pods beside it; the Job restarts a crashed driver
and replaces one lost with its node). The same spec running: nothing to do. Another spec
running (the job's code under ../../jobs or its settings changed): an upgrade with a
savepoint, checked first against a copy of the running job's state, then the health gate,
and an automatic rollback to the last stable spec when the new one is not healthy (the task
then fails saying so).

Trigger it after a change of the job, e.g. from CI; running it again changes nothing,
except once after a restart window (the window's run id, its restart nonce, is part of
the running spec's identity, so the first deploy after it restarts the job once more).
`kafkaspark deploy status --checkpoint <checkpoint>` shows the deployment's record.
"""

from __future__ import annotations

from datetime import timedelta

import clickstream_settings as job
import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.operators.deploy import DeployStreamingJobOperator

with DAG(
    dag_id="clickstream_deploy",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": timedelta(minutes=1)},
    tags=["clickstream", "kafkaspark", "kubernetes"],
    doc_md=__doc__,
) as dag:
    DeployStreamingJobOperator(
        task_id="deploy",
        job_spec=job.job_spec(),
        kafka_conn_id=job.KAFKA_CONN_ID,
        spark_conn_id=job.SPARK_CONN_ID,
        kubernetes_conn_id=job.KUBERNETES_CONN_ID,
        aws_conn_id=job.AWS_CONN_ID,
        upgrade_mode="savepoint",
        savepoint_root=job.SAVEPOINTS,
        max_savepoints=10,
        # The Job retries a crashed driver 5 times (its backoffLimit, with the Job
        # controller's own back-off); a pod lost with its node does not count.
        max_restarts=5,
        # A driver pod's image pull and first batch take a while on a cold node; the gate
        # then wants two more batches within its window.
        health_timeout_s=600,
        min_new_batches=2,
    )
