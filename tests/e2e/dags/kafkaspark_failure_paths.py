"""DAGs that take the failure paths on purpose, for the e2e tests: a job whose code cannot be
imported, and a driver that dies with no restart budget left. Each uses the example job's
settings (`examples/dag_settings.py`) under a job name of its own."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pendulum
from airflow.sdk import DAG, task

from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor

settings = example_settings()


def job(name: str, **changes: Any) -> dict[str, Any]:
    spec = settings.job_spec()
    spec.update(
        job_name=f"{settings.job_name}_{name}",
        checkpoint_location=f"{settings.home}/{name}/checkpoint",
        **changes,
    )
    return spec


def watch(spec: dict[str, Any]) -> StreamingHealthSensor:
    return StreamingHealthSensor(
        task_id="wait_healthy",
        checkpoint=spec["checkpoint_location"],
        since_batch=None,
        min_new_batches=2,
        window_s=30,
        poke_interval=1,
        timeout=300,
        # Long on purpose: these failures must be reported, not found by waiting this out.
        startup_grace_s=180,
    )


with DAG(
    dag_id="kafkaspark_test_bad_code",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["kafkaspark", "test"],
):
    bad = job(
        "bad_code",
        transformation="broken_upgrade:transform",
        python_path=["user_code"],  # relative to this file's folder
    )
    (
        SubmitStreamingJobOperator(
            task_id="submit",
            job_spec=bad,
            workdir=f"{settings.home}/bad_code/drivers",
            restart_backoff_s=1,
        )
        >> watch(bad)
    )


with DAG(
    dag_id="kafkaspark_test_no_restart_budget",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["kafkaspark", "test"],
):
    fragile = job("no_budget")

    @task
    def kill_the_driver_once_it_runs(checkpoint: str) -> int:
        """SIGKILL the driver (the lease holder's process), as a crash of its host would."""
        from airflow_provider_kafkaspark.core.control.folder import ControlFolder

        control = ControlFolder(checkpoint)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            lease = control.live_lease()
            if lease is not None:
                os.kill(lease.pid, signal.SIGKILL)
                return lease.pid
            time.sleep(0.5)
        raise TimeoutError(f"no driver took the lease of {checkpoint} within 240 s")

    (
        SubmitStreamingJobOperator(
            task_id="submit",
            job_spec=fragile,
            workdir=f"{settings.home}/no_budget/drivers",
            max_restarts=0,
        )
        >> kill_the_driver_once_it_runs(fragile["checkpoint_location"])
        >> watch(fragile)
    )
