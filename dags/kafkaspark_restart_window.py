"""Scheduled restart window: stop with a savepoint, restore it (optionally upgraded), wait
healthy, roll back.

standby -> stop (graceful, savepoint) -> restore (verify + reconcile + restore + handover)
-> healthy
The standby is the restored job's driver, started and warmed up while the old one still runs;
the restore hands the restored checkpoint over to it, so the downtime is a stop plus a query
start, not a driver start (`KAFKASPARK_WARM_HANDOVER=false`: no standby, the restore submits
a new driver). The restore submits the upgraded job when `KAFKASPARK_UPGRADE_TRANSFORMATION`
names new code (see `examples/dag_settings.py`), else the same job. If the restored job is not
healthy: stop it (no savepoint) and restore the savepoint taken at the start of the window
again with the previous job, the known-good state (the rollback pattern).
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator
from airflow_provider_kafkaspark.operators.submit import (
    RestoreStreamingJobOperator,
    SubmitStreamingJobOperator,
)
from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor

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
    standby = (
        SubmitStreamingJobOperator(
            task_id="start_standby",
            aws_conn_id=settings.aws_conn_id,
            job_spec=settings.upgraded_job_spec(),
            standby=True,
            workdir=settings.workdir,
            **settings.submit_arguments(),
        )
        if settings.warm_handover
        else None
    )
    stop = StopStreamingJobOperator(
        task_id="stop_with_savepoint",
        aws_conn_id=settings.aws_conn_id,
        checkpoint=settings.checkpoint,
        job_name=settings.job_name,
        savepoint_root=settings.savepoints,
        # The restore below is in checkpoint mode, which re-runs a batch the stop cut short.
        at_batch_boundary=True,
    )
    restore = RestoreStreamingJobOperator(
        task_id="restore",
        aws_conn_id=settings.aws_conn_id,
        job_spec=settings.upgraded_job_spec(),
        savepoint_root=settings.savepoints,
        restore_from=stop.output["savepoint_id"],
        restore_mode="checkpoint",
        workdir=settings.workdir,
        handover_from=standby.output if standby is not None else None,
        **settings.submit_arguments(),
    )
    healthy = StreamingHealthSensor(
        task_id="wait_healthy",
        aws_conn_id=settings.aws_conn_id,
        checkpoint=settings.checkpoint,
        kafka_conn_id="kafka_default",
        since_batch=restore.output["since_batch"],
        min_new_batches=2,
        window_s=30,
        poke_interval=2,
        timeout=300,
    )
    stop_unhealthy = StopStreamingJobOperator(
        task_id="stop_unhealthy",
        aws_conn_id=settings.aws_conn_id,
        checkpoint=settings.checkpoint,
        job_name=settings.job_name,
        savepoint_root=settings.savepoints,
        take_savepoint=False,
        allow_force_kill=True,
        drain_timeout_s=60,
        trigger_rule="one_failed",
    )
    rollback = RestoreStreamingJobOperator(
        task_id="rollback",
        aws_conn_id=settings.aws_conn_id,
        job_spec=settings.job_spec(),
        savepoint_root=settings.savepoints,
        restore_from=stop.output["savepoint_id"],
        restore_mode="checkpoint",
        workdir=settings.workdir,
        **settings.submit_arguments(),
    )
    if standby is not None:
        standby >> stop
    stop >> restore >> healthy >> stop_unhealthy >> rollback
