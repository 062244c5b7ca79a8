"""Deploy the example streaming job and wait until it is healthy.

submit (skip if it already runs) -> health sensor (N new batches, status OK).
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor

settings = example_settings()

with DAG(
    dag_id="kafkaspark_deploy",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["kafkaspark", "example"],
    doc_md=__doc__,
) as dag:
    submit = SubmitStreamingJobOperator(
        task_id="submit",
        aws_conn_id=settings.aws_conn_id,
        job_spec=settings.job_spec(),
        kafka_conn_id="kafka_default",
        workdir=settings.workdir,
        **settings.submit_arguments(),
        if_running="skip",
    )
    healthy = StreamingHealthSensor(
        task_id="wait_healthy",
        aws_conn_id=settings.aws_conn_id,
        checkpoint=settings.checkpoint,
        kafka_conn_id="kafka_default",
        since_batch=submit.output["since_batch"],
        min_new_batches=2,
        window_s=30,
        poke_interval=2,
        timeout=300,
    )
    submit >> healthy
