"""KafkaBackfillOperator: the job's transformation over exactly one data interval."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator, Context

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage
    from airflow.sdk.types import RuntimeTaskInstanceProtocol


class KafkaBackfillOperator(BaseOperator):
    """Run the job's transformation as a bounded Spark batch over the run's data interval.

    The interval's start and end times become per-partition offsets (Kafka's
    offsets-for-times on record timestamps; the end is exclusive). The output of each
    interval goes to its own folder under ``output_root`` and is replaced on a re-run, so
    re-running an interval never duplicates. Returns the interval, its offsets and the rows
    written.

    OpenLineage (``lineage.py``): the source topics in; out, the output root before
    the run and the interval's folder after it.

    :param job_spec: the job spec (dict or JSON) whose source and transformation the backfill
        runs; its Kafka servers and client settings come from ``kafka_conn_id``. Templated.
    :param output_root: the folder (a path or URL) under which each interval's output goes.
        Templated.
    :param kafka_conn_id: an official-provider ``kafka`` connection (default
        ``kafka_default``).
    :param master: the Spark master of the batch, run from this worker (default
        ``local[2]``). Templated.
    :param timeout_s: how long the batch may take, in seconds (default 1 hour).
    """

    template_fields: Sequence[str] = ("job_spec", "output_root", "master")
    ui_color = "#eef8e8"

    def __init__(
        self,
        *,
        job_spec: dict[str, Any] | str,
        output_root: str,
        kafka_conn_id: str = "kafka_default",
        master: str = "local[2]",
        timeout_s: float = 3600.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.job_spec = job_spec
        self.output_root = output_root
        self.kafka_conn_id = kafka_conn_id
        self.master = master
        self.timeout_s = timeout_s
        # The interval's folder the run wrote: lineage after the run.
        self._written: str | None = None

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_kafkaspark.airflow_errors import airflow_errors

        with airflow_errors(self.task_id, self.kafka_conn_id):
            return self._backfill(context)

    def _backfill(self, context: Context) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowFailException

        from airflow_provider_kafkaspark.errors import InvalidArgumentError
        from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
        from airflow_provider_kafkaspark.lifecycle.backfill import run_backfill
        from airflow_provider_kafkaspark.lifecycle.inputs import job_spec_of, with_connection

        start, end = context["data_interval_start"], context["data_interval_end"]
        if start is None or end is None or end <= start:
            problem = (
                f"backfill needs a data interval with start < end, got {start} .. {end}: "
                f"schedule the DAG with a data-interval timetable"
            )
            raise AirflowFailException(problem) from InvalidArgumentError(problem)
        given = job_spec_of(self.job_spec)
        hook = KafkaSparkHook(self.kafka_conn_id)
        servers, spec_config = hook.kafka_spec_config()
        spec = with_connection(
            given, servers, spec_config, f"Kafka connection {self.kafka_conn_id!r}"
        )
        result = run_backfill(
            spec,
            kafka_config=hook.kafka_client_config(),
            start_ms=int(start.timestamp() * 1000),
            end_ms=int(end.timestamp() * 1000),
            output_root=self.output_root,
            master=self.master,
            timeout_s=self.timeout_s,
        )
        self.log.info(
            "backfill %s .. %s: %s rows to %s", start, end, result["rows"], result["output"]
        )
        self._written = str(result["output"])
        return result

    def _lineage(self) -> OperatorLineage[Any, Any]:
        from airflow_provider_kafkaspark.core.spec.lineage import backfill_datasets
        from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
        from airflow_provider_kafkaspark.lifecycle.inputs import job_spec_of
        from airflow_provider_kafkaspark.lineage import connection_spec, operator_lineage

        spec = connection_spec(job_spec_of(self.job_spec), KafkaSparkHook(self.kafka_conn_id))
        return operator_lineage(backfill_datasets(spec, self._written or self.output_root))

    def get_openlineage_facets_on_start(self) -> OperatorLineage[Any, Any]:
        return self._lineage()

    def get_openlineage_facets_on_complete(
        self, task_instance: RuntimeTaskInstanceProtocol
    ) -> OperatorLineage[Any, Any]:
        return self._lineage()
