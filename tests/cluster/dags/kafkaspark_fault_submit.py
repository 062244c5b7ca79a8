"""A submit that its task's retries cover, and a health wait, for the bed's fault test
(`tests/cluster/test_airflow_faults_on_bed.py`): the example job's settings
(`examples/dag_settings.py`), the submit retried once on another worker when its own dies,
the health sensor deferred to the triggerer (`operators.default_deferrable`)."""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor

settings = example_settings()

with DAG(
    dag_id="kafkaspark_fault_submit",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["kafkaspark", "test"],
    doc_md=__doc__,
) as dag:
    submit = SubmitStreamingJobOperator(
        task_id="submit",
        job_spec=settings.job_spec(),
        aws_conn_id=settings.aws_conn_id,
        workdir=settings.workdir,
        retries=1,
        retry_delay=timedelta(seconds=2),
        **settings.submit_arguments(),
    )
    StreamingHealthSensor(
        task_id="healthy",
        handle=submit.output,
        aws_conn_id=settings.aws_conn_id,
        min_new_batches=1,
        window_s=40,
        poll_interval_s=2,
        timeout=600,
    )
