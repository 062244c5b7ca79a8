"""`KafkaPartitionReconcileOperator`: compare a checkpoint's offsets with what Kafka has now.

Run it on a schedule or before a (re)start: new partitions, deleted topics and offsets aged
out of retention are findings (`core.kafka.reconcile`). The task fails at `fail_on` severity, is
skipped at `soft_fail_on`, and returns the plan as XCom either way it completes.

Only Airflow and the pure core are imported here; the Kafka modules load inside `execute`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from airflow_provider_kafkaspark.core.kafka.reconcile import ReconcilePolicy, Severity
from airflow_provider_kafkaspark.core.spec.args import positive_number
from airflow_provider_kafkaspark.errors import InvalidInputError

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.core.kafka.reconcile import ReconcilePlan

LAG_XCOM_KEY = "lag"
# Findings named in a failure or skip message; the rest are counted.
_NAMED_FINDINGS = 5


def _severity(value: str | Severity | None, what: str) -> Severity | None:
    if value is None or isinstance(value, Severity):
        return value
    try:
        return Severity[str(value).strip().upper()]
    except KeyError:
        raise InvalidInputError(
            f"{what}: unknown severity {str(value)[:40]!r}; "
            f"choose from {[s.name for s in Severity]}"
        ) from None


class KafkaPartitionReconcileOperator(BaseOperator):
    """Reconcile a checkpoint against Kafka and gate on the findings.

    :param checkpoint: checkpoint location (path or fsspec URL). Templated.
    :param kafka_conn_id: an official-provider `kafka` connection. Templated.
    :param subscribe: topics the job reads, if the checkpoint may not name them all (a topic
        subscribed but never read yet). Templated.
    :param fail_on: the severity (INFO, WARNING, CRITICAL) at or above which the task fails
        (AirflowFailException naming the findings); None never fails.
    :param soft_fail_on: the severity at or above which the task is skipped instead (checked
        after `fail_on`); None never skips.
    :param report_only: never fail nor skip; only report.
    :param kafka_timeout_s: budget of each Kafka request.
    :param policy: thresholds and severities of the findings.
    :param aws_conn_id: an official-provider ``aws`` connection for a checkpoint on S3.

    Returns `ReconcilePlan.to_dict()` (small: findings folded per topic, the worst lag
    entries only) and pushes the lag totals under the XCom key "lag", failed or not.
    """

    template_fields: Sequence[str] = ("checkpoint", "kafka_conn_id", "subscribe")
    ui_color = "#fdebd0"

    def __init__(
        self,
        *,
        checkpoint: str,
        kafka_conn_id: str = "kafka_default",
        subscribe: Sequence[str] | None = None,
        fail_on: str | Severity | None = "CRITICAL",
        soft_fail_on: str | Severity | None = None,
        report_only: bool = False,
        kafka_timeout_s: float = 10.0,
        policy: ReconcilePolicy | None = None,
        aws_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.aws_conn_id = aws_conn_id
        self.checkpoint = checkpoint
        self.kafka_conn_id = kafka_conn_id
        self.subscribe = subscribe
        self.fail_on = _severity(fail_on, f"{self.task_id}.fail_on")
        self.soft_fail_on = _severity(soft_fail_on, f"{self.task_id}.soft_fail_on")
        self.report_only = report_only
        self.kafka_timeout_s = positive_number(kafka_timeout_s, f"{self.task_id}: kafka_timeout_s")
        self.policy = policy

    def topics(self) -> list[str]:
        """`subscribe` after templating: a list, or a comma-separated string."""
        raw = self.subscribe
        if raw is None:
            return []
        items = raw.split(",") if isinstance(raw, str) else list(raw)
        topics = [str(t).strip() for t in items]
        return [t for t in topics if t]

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_kafkaspark.airflow_errors import airflow_errors
        from airflow_provider_kafkaspark.core.health.observe import kafka_view
        from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
        from airflow_provider_kafkaspark.core.kafka.reconcile import build_reconcile_plan
        from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
        from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

        with airflow_errors(self.task_id, self.kafka_conn_id):
            hook = KafkaSparkHook(self.kafka_conn_id, aws_conn_id=self.aws_conn_id)
            with hook.storage():
                offsets = CheckpointReader(self.checkpoint).position().committed_offsets
            config = hook.kafka_client_config()
            with KafkaFacade(config, timeout_s=self.kafka_timeout_s) as kafka:
                view = kafka_view(kafka, offsets, self.topics())
            plan = build_reconcile_plan(offsets, view, self.policy)

        result = plan.to_dict()
        self.log.info("%s", plan.summary())
        for finding in plan.findings:
            self.log.log(
                _LOG_LEVELS[finding.severity],
                "%s %s %s: %s (action: %s)",
                finding.severity.name,
                finding.kind.value,
                finding.where,
                finding.message,
                finding.action,
            )
        lag = {k: v for k, v in result["lag"].items() if k != "top"}
        context["ti"].xcom_push(key=LAG_XCOM_KEY, value=lag)

        if self.report_only:
            return result
        if self.fail_on is not None and plan.blocking(self.fail_on):
            raise AirflowFailException(_gate_message(plan, self.fail_on, "failing"))
        if self.soft_fail_on is not None and plan.blocking(self.soft_fail_on):
            raise AirflowSkipException(_gate_message(plan, self.soft_fail_on, "skipping"))
        return result


_LOG_LEVELS = {
    Severity.INFO: logging.INFO,
    Severity.WARNING: logging.WARNING,
    Severity.CRITICAL: logging.ERROR,
}


def _gate_message(plan: ReconcilePlan, threshold: Severity, verb: str) -> str:
    hits = [f for f in plan.findings if f.severity >= threshold]
    named = "; ".join(
        f"{f.severity.name} {f.kind.value} {f.where}: {f.message}" for f in hits[:_NAMED_FINDINGS]
    )
    more = f" (+{len(hits) - _NAMED_FINDINGS} more)" if len(hits) > _NAMED_FINDINGS else ""
    return f"reconcile {verb}: {len(hits)} finding(s) at or above {threshold.name}: {named}{more}"
