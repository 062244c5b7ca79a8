"""Deploy the example streaming job declaratively and wait until it is healthy.

One task: nothing running -> submit; the same spec running -> nothing to do; another spec
running (the code or the spec changed) -> an upgrade with a savepoint, checked for
compatibility against a copy of the running job's state before the old job is touched, and
rolled back automatically when the new spec is not healthy. `kafkaspark deploy status
--checkpoint <checkpoint>` shows the deployment's record.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.operators.deploy import DeployStreamingJobOperator

settings = example_settings()

with DAG(
    dag_id="kafkaspark_deploy",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["kafkaspark", "example"],
    doc_md=__doc__,
) as dag:
    DeployStreamingJobOperator(
        task_id="deploy",
        aws_conn_id=settings.aws_conn_id,
        job_spec=settings.job_spec(),
        kafka_conn_id="kafka_default",
        workdir=settings.workdir,
        upgrade_mode="savepoint",
        savepoint_root=settings.savepoints,
        **settings.submit_arguments(),
    )
