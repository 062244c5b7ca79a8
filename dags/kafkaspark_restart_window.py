"""Scheduled restart window, as a deployment upgrade: the job moves to the spec the window
deploys (the upgraded code when `KAFKASPARK_UPGRADE_TRANSFORMATION` names some, see
`examples/dag_settings.py`; else the same job, restarted: the run id is the restart nonce).

check (the new spec once against a copy of the running state) -> stop at a batch boundary
with a savepoint -> restore it (warm handover to a standby started before the stop, unless
`KAFKASPARK_WARM_HANDOVER=false`) -> health gate -> STABLE; or, unhealthy, an automatic
rollback to the last stable spec from that savepoint, and the task fails saying so.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.operators.deploy import DeployStreamingJobOperator

settings = example_settings()

with DAG(
    dag_id="kafkaspark_restart_window",
    schedule=settings.restart_window_schedule,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["kafkaspark", "example"],
    doc_md=__doc__,
) as dag:
    DeployStreamingJobOperator(
        task_id="upgrade",
        aws_conn_id=settings.aws_conn_id,
        job_spec=settings.upgraded_job_spec(),
        kafka_conn_id="kafka_default",
        workdir=settings.workdir,
        upgrade_mode="savepoint",
        savepoint_root=settings.savepoints,
        restart_nonce="{{ run_id }}",
        warm_handover=settings.warm_handover,
        compat_check=None if settings.compat_check else False,
        **settings.submit_arguments(),
    )
