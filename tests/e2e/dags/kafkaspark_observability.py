"""A DAG that leaves every trace the operators give a deployment to watch a job by: links from
its task instances, OpenLineage events, metrics. Submit the example job with its Spark UI on
a fixed port (`KAFKASPARK_TEST_UI_PORT`), look at that UI through the submit's link once a
batch committed, submit again replacing the driver (a restart), take a savepoint of the
running job, stop it with another. For tests/e2e/test_observability.py."""

from __future__ import annotations

import os
import time
import urllib.request
from typing import Any

import pendulum
from airflow.sdk import DAG, task

from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.operators.savepoint import SavepointStreamingJobOperator
from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator
from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator

settings = example_settings()
NAME = f"{settings.job_name}_obs"


def job() -> dict[str, Any]:
    spec = settings.job_spec()
    spec.update(
        job_name=NAME,
        checkpoint_location=f"{settings.home}/{NAME}/checkpoint",
        # The provider turns Spark's UI off in local mode; this job turns it on at a known port.
        spark_conf={
            "spark.ui.enabled": "true",
            "spark.ui.port": os.environ.get("KAFKASPARK_TEST_UI_PORT", "4040"),
        },
    )
    return spec


@task
def look_at_the_spark_ui(checkpoint: str, submit_task: str, **context: Any) -> dict[str, Any]:
    """Once the driver holds its lease and a batch committed: the submit's Spark UI link, and
    what it answers (asked again until it does: the UI may come up after the lease)."""
    from airflow_provider_kafkaspark.core.control.folder import ControlFolder
    from airflow_provider_kafkaspark.lifecycle.observe import latest_committed

    url = context["ti"].xcom_pull(task_ids=submit_task, key="_link_SparkUiLink")
    control = ControlFolder(checkpoint)
    deadline = time.monotonic() + 240
    problem = "no live lease"
    while time.monotonic() < deadline:
        if control.live_lease() and (latest_committed(checkpoint) or -1) >= 0:
            try:
                with urllib.request.urlopen(f"{url}/jobs/", timeout=10) as answer:
                    return {"url": url, "status": answer.status}
            except OSError as exc:
                problem = f"{url}: {exc}"
        time.sleep(0.5)
    raise TimeoutError(f"the driver's Spark UI did not answer within 240 s: {problem}")


with DAG(
    dag_id="kafkaspark_test_observability",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["kafkaspark", "test"],
):
    spec = job()
    checkpoint = spec["checkpoint_location"]
    savepoints = f"{settings.home}/{NAME}/savepoints"
    drivers = f"{settings.home}/{NAME}/drivers"
    submit = SubmitStreamingJobOperator(
        task_id="submit", job_spec=spec, workdir=drivers, restart_backoff_s=1
    )
    replace = SubmitStreamingJobOperator(
        task_id="replace", job_spec=spec, workdir=drivers, if_running="replace"
    )
    (
        submit
        >> look_at_the_spark_ui.override(task_id="look_first")(checkpoint, "submit")
        >> replace
        >> look_at_the_spark_ui.override(task_id="look_again")(checkpoint, "replace")
        >> SavepointStreamingJobOperator(
            task_id="savepoint",
            checkpoint=checkpoint,
            job_name=NAME,
            savepoint_root=savepoints,
        )
        >> StopStreamingJobOperator(
            task_id="stop", handle=replace.output, savepoint_root=savepoints, deferrable=False
        )
    )
