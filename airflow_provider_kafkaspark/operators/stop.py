"""StopStreamingJobOperator: graceful stop, then a savepoint, announced as an Asset event."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import Asset, BaseOperator, Context


def savepoint_asset(job_name: str) -> Asset:
    """The Asset a job's savepoints are announced on; schedule a DAG on it to react."""
    return Asset(
        name=f"kafkaspark-savepoints-{job_name}", uri=f"kafkaspark://savepoints/{job_name}"
    )


class StopStreamingJobOperator(BaseOperator):
    """Stop a streaming job through its control folder and keep a savepoint.

    Waits for the driver's `stopped.json` (the batch in flight drains first). After
    ``drain_timeout_s`` the driver is killed only if ``allow_force_kill`` (Spark then
    re-runs the interrupted batch on restore). Returns the savepoint's small summary and
    emits an event on ``savepoint_asset(job_name)``.
    """

    template_fields: Sequence[str] = ("checkpoint", "job_name", "savepoint_root", "handle")
    ui_color = "#fdeee8"

    def __init__(
        self,
        *,
        checkpoint: str,
        job_name: str,
        savepoint_root: str,
        handle: dict[str, Any] | str | None = None,
        drain_timeout_s: float = 120.0,
        allow_force_kill: bool = False,
        take_savepoint: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("outlets", [savepoint_asset(job_name)])
        super().__init__(**kwargs)
        self.checkpoint = checkpoint
        self.job_name = job_name
        self.savepoint_root = savepoint_root
        self.handle = handle
        self.drain_timeout_s = drain_timeout_s
        self.allow_force_kill = allow_force_kill
        self.take_savepoint = take_savepoint

    def execute(self, context: Context) -> dict[str, Any]:
        import ast

        from airflow.sdk.exceptions import AirflowFailException

        from airflow_provider_kafkaspark.errors import KafkaSparkError
        from airflow_provider_kafkaspark.lifecycle import savepoint_after_stop, stop_job
        from airflow_provider_kafkaspark.versions import SPARK_VERSION

        handle = self.handle
        if isinstance(handle, str) and handle:
            handle = ast.literal_eval(handle)  # a rendered XCom dict
        pid = int(handle["pid"]) if isinstance(handle, dict) and handle.get("pid") else None
        try:
            stopped = stop_job(
                self.checkpoint,
                requested_by=f"airflow:{self.dag_id}.{self.task_id}",
                reason="stop operator",
                drain_timeout_s=self.drain_timeout_s,
                pid=pid,
                allow_force_kill=self.allow_force_kill,
            )
        except KafkaSparkError as exc:
            raise AirflowFailException(str(exc)) from exc
        result: dict[str, Any] = {
            "job_name": self.job_name,
            "stopped": None
            if stopped is None
            else {
                "reason": stopped.reason,
                "clean": stopped.clean,
                "last_planned_batch": stopped.last_planned_batch,
                "last_committed_batch": stopped.last_committed_batch,
            },
        }
        if stopped is not None:
            self.log.info(
                "stopped: %s (planned %s, committed %s, clean=%s)",
                stopped.reason,
                stopped.last_planned_batch,
                stopped.last_committed_batch,
                stopped.clean,
            )
        if self.take_savepoint:
            manifest = savepoint_after_stop(
                self.checkpoint, self.savepoint_root, self.job_name, spark_version=SPARK_VERSION
            )
            result["savepoint"] = manifest.summary()
            result["savepoint_id"] = manifest.savepoint_id
            self.log.info("savepoint %s created", manifest.savepoint_id)
            asset = savepoint_asset(self.job_name)
            context["outlet_events"][asset].extra = {
                "savepoint_id": manifest.savepoint_id,
                "savepoint_root": self.savepoint_root,
                "last_committed_batch": manifest.last_committed_batch,
            }
        return result
