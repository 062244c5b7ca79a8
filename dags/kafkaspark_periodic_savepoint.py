"""A savepoint of the running example job on a schedule (hourly by default), without stopping
it: a copy of its checkpoint as of its last committed batch. Retention follows each one: the
newest savepoints the policy allows, the newest one that verifies, those marked in use, and
the newest restore backup stay; older ones and older restore backups go. Each savepoint is
announced on the job's savepoint Asset, as the stop DAG's is.

Restored (`kafkaspark_deploy` with a savepoint id), it continues after that batch; the batches
the job committed after it run again, as after any rollback.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.operators.savepoint import SavepointStreamingJobOperator

settings = example_settings()

with DAG(
    dag_id="kafkaspark_periodic_savepoint",
    schedule=settings.periodic_savepoint_schedule,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["kafkaspark", "example"],
    doc_md=__doc__,
) as dag:
    SavepointStreamingJobOperator(
        task_id="savepoint_running_job",
        aws_conn_id=settings.aws_conn_id,
        checkpoint=settings.checkpoint,
        job_name=settings.job_name,
        savepoint_root=settings.savepoints,
        max_count=settings.savepoint_max_count,
        max_age_s=settings.savepoint_max_age_s,
    )
