"""SubmitStreamingJobOperator and RestoreStreamingJobOperator: templated fields and defaults."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.operators.submit import (
    RestoreStreamingJobOperator,
    SubmitStreamingJobOperator,
)


def test_submit_templates_the_spec_and_restore_fields() -> None:
    op = SubmitStreamingJobOperator(task_id="submit", job_spec=example_settings().job_spec())
    assert {"job_spec", "restore_from", "restore_mode", "savepoint_root"} <= set(op.template_fields)
    assert op.if_running == "fail"  # the safe default: never two drivers on one checkpoint


def test_submit_refuses_an_unknown_if_running() -> None:
    with pytest.raises(ValueError, match="if_running='sometimes'"):
        SubmitStreamingJobOperator(task_id="s", job_spec={}, if_running="sometimes")


def test_restore_defaults_to_the_newest_savepoint() -> None:
    op = RestoreStreamingJobOperator(task_id="r", job_spec={}, savepoint_root="/sp")
    assert op.restore_from == "latest" and op.restore_mode == "checkpoint"
    assert op.savepoint_root == "/sp"


def test_the_handover_handle_is_a_templated_field_and_a_standby_takes_no_restore() -> None:
    op = RestoreStreamingJobOperator(
        task_id="r", job_spec={}, savepoint_root="/sp", handover_from={"standby_token": "t"}
    )
    assert "handover_from" in op.template_fields and op.handover_from == {"standby_token": "t"}
    with pytest.raises(ValueError, match="standby=True starts a standby"):
        SubmitStreamingJobOperator(
            task_id="s", job_spec={}, standby=True, restore_from="latest", savepoint_root="/sp"
        )


def test_submit_host_reads_the_executor_list_and_the_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_kafkaspark.operators.submit import submit_host

    monkeypatch.setenv(
        "AIRFLOW__CORE__EXECUTOR", "LocalExecutor,fast:airflow.providers.celery.CeleryExecutor"
    )
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    host = submit_host()
    assert host.executors == ("LocalExecutor", "airflow.providers.celery.CeleryExecutor")
    assert host.in_kubernetes_pod
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    assert not submit_host().in_kubernetes_pod


def test_a_submit_without_a_spark_connection_in_a_pod_fails_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from airflow_provider_kafkaspark.errors import InvalidArgumentError

    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    op = SubmitStreamingJobOperator(task_id="submit", job_spec={})
    with pytest.raises(InvalidArgumentError, match=r"task 'submit'.*allow_local_driver=True"):
        op._backend(hook=None)  # type: ignore[arg-type]  # no connection is read
    allowed = SubmitStreamingJobOperator(task_id="s", job_spec={}, allow_local_driver=True)
    assert type(allowed._backend(hook=None)).__name__ == "LocalBackend"  # type: ignore[arg-type]
