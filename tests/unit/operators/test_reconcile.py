"""KafkaPartitionReconcileOperator: its arguments and templated fields, without a broker."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.core.kafka.reconcile import Severity
from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator


def test_reconcile_operator_arguments() -> None:
    op = KafkaPartitionReconcileOperator(
        task_id="r", checkpoint="/cp", subscribe="a, b,,c", fail_on="warning", soft_fail_on=None
    )
    assert op.fail_on is Severity.WARNING and op.soft_fail_on is None
    assert op.topics() == ["a", "b", "c"]
    assert {"checkpoint", "subscribe"} <= set(op.template_fields)
    with pytest.raises(InvalidInputError, match="unknown severity"):
        KafkaPartitionReconcileOperator(task_id="r2", checkpoint="/cp", fail_on="fatal")
