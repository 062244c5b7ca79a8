"""Deploy the clickstream job on YARN: make the running job the one `clickstream_settings`
describes, and wait until it is healthy.

Nothing running: a submit (a YARN application in cluster mode, the driver in its
application master). The same spec running: nothing to do. Another spec running (the job's
code under ../../jobs or its settings changed): an upgrade with a savepoint, checked first
against a copy of the running job's state, then the health gate, and an automatic rollback
to the last stable spec when the new one is not healthy (the task then fails saying so).

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
    tags=["clickstream", "kafkaspark", "yarn"],
    doc_md=__doc__,
) as dag:
    DeployStreamingJobOperator(
        task_id="deploy",
        job_spec=job.job_spec(),
        kafka_conn_id=job.KAFKA_CONN_ID,
        spark_conn_id=job.SPARK_CONN_ID,
        aws_conn_id=job.AWS_CONN_ID,
        jars=job.JARS,
        upgrade_mode="savepoint",
        savepoint_root=job.SAVEPOINTS,
        max_savepoints=10,
        # YARN restarts a crashed driver: at most 5 attempts an hour.
        max_restarts=5,
        restart_window_s=3600,
        # A cold YARN application takes a minute to its first batch; the gate then wants two
        # more batches within its window.
        health_timeout_s=600,
        min_new_batches=2,
    )
