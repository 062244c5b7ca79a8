"""DeployStreamingJobOperator: its arguments checked when the DAG is parsed, its templates."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_kafkaspark.core.deploy.deployment import UpgradeMode
from airflow_provider_kafkaspark.errors import InvalidArgumentError
from airflow_provider_kafkaspark.operators.deploy import DeployStreamingJobOperator

SPEC = {
    "job_name": "clicks",
    "source": {"bootstrap_servers": "k:9092", "subscribe": ["in"]},
    "sink": {"kind": "console"},
    "checkpoint_location": "/tmp/clicks",
}


def operator(**kwargs: Any) -> DeployStreamingJobOperator:
    kwargs.setdefault("savepoint_root", "/tmp/sp")
    return DeployStreamingJobOperator(task_id="deploy", job_spec=SPEC, **kwargs)


def test_the_policy_follows_the_arguments() -> None:
    op = operator(upgrade_mode="last-state", max_savepoints=3, warm_handover=True)
    policy = op._policy().checked()
    assert policy.upgrade_mode is UpgradeMode.LAST_STATE
    assert policy.checks_compatibility and policy.max_savepoints == 3 and policy.warm_handover
    assert not operator(upgrade_mode="stateless")._policy().checks_compatibility
    assert {"job_spec", "upgrade_mode", "restart_nonce", "savepoint_root"} <= set(
        op.template_fields
    )


def test_bad_arguments_fail_when_the_dag_is_parsed() -> None:
    with pytest.raises(InvalidArgumentError, match="blue-green"):
        operator(upgrade_mode="blue-green")
    with pytest.raises(InvalidArgumentError, match="needs savepoint_root"):
        operator(savepoint_root=None)
    with pytest.raises(InvalidArgumentError, match="restore_policy"):
        operator(restore_policy="newest")
    # last-state continues the checkpoint: no savepoint root needed.
    assert operator(upgrade_mode="last-state", savepoint_root=None).upgrade_mode == "last-state"


def test_templated_arguments_are_checked_once_rendered() -> None:
    op = operator(upgrade_mode="{{ params.mode }}", restart_nonce="{{ run_id }}")
    assert op.upgrade_mode == "{{ params.mode }}"
