"""The clickstream job's nightly restart window on YARN: a deployment upgrade of the job to
itself (the run id is the restart nonce), which gives it a fresh application, fresh
executors and a savepoint from a known moment.

Check the job once against a copy of its state -> start the new application as a warm
standby while the old one runs -> stop the old one at a batch boundary with a savepoint ->
hand the checkpoint over to the standby -> health gate. An unhealthy job is rolled back to
the last stable spec from that savepoint, and the task fails saying so. Downtime is the
stop plus the standby's query start (seconds); two applications of the job run meanwhile.
"""

from __future__ import annotations

from datetime import timedelta

import clickstream_settings as job
import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.operators.deploy import DeployStreamingJobOperator

with DAG(
    dag_id="clickstream_restart_window",
    schedule="0 3 * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 1, "retry_delay": timedelta(minutes=2)},
    tags=["clickstream", "kafkaspark", "yarn"],
    doc_md=__doc__,
) as dag:
    DeployStreamingJobOperator(
        task_id="restart",
        job_spec=job.job_spec(),
        kafka_conn_id=job.KAFKA_CONN_ID,
        spark_conn_id=job.SPARK_CONN_ID,
        aws_conn_id=job.AWS_CONN_ID,
        jars=job.JARS,
        upgrade_mode="savepoint",
        savepoint_root=job.SAVEPOINTS,
        max_savepoints=10,
        restart_nonce="{{ run_id }}",
        warm_handover=True,
        max_restarts=5,
        restart_window_s=3600,
        health_timeout_s=600,
        min_new_batches=2,
    )
