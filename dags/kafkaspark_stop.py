"""Stop the example job with a savepoint, for maintenance (Kafka, the cluster, the job's
host): the driver lets its batch in flight commit and exits, and the savepoint keeps where
it stopped. `kafkaspark_deploy` brings it back from its checkpoint; a reconcile run in
between says what changed in Kafka meanwhile.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator

settings = example_settings()

with DAG(
    dag_id="kafkaspark_stop",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["kafkaspark", "example"],
    doc_md=__doc__,
) as dag:
    StopStreamingJobOperator(
        task_id="stop_with_savepoint",
        aws_conn_id=settings.aws_conn_id,
        checkpoint=settings.checkpoint,
        job_name=settings.job_name,
        savepoint_root=settings.savepoints,
        wait_in_task_s=settings.stop_wait_in_task_s or 0,
    )
