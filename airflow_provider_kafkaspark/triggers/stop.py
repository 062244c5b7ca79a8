"""StreamingStopTrigger: waits, off the worker, for the driver's stopped report."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent


class StreamingStopTrigger(BaseTrigger):
    """Polls the control folder until the driver answers the stop request made at
    `requested_at_ms` (event "stopped"), is gone without a report ("gone"), ended without
    running after the request when only its backend listed it (`awaited_restart`:
    "not_running"), or the drain bound passes ("timeout"). `job_ref` (a job reference's
    dict) names the driver, which the trigger asks its backend about: a pid only on its own
    host, a YARN application through its ResourceManager from anywhere.

    With `savepoint_root` (and `job_name`) the trigger also takes the stopped job's savepoint
    before its "stopped" event, which then names it (`savepoint_id`). The copy takes
    seconds on S3; in the resumed task it kept Airflow's late result for the deferring try
    racing the resumed try, which was then put up for retry after a clean stop. The resumed
    task finds the savepoint as one of this stop (`lifecycle/stop.savepoint_after_stop`) and
    only returns it. A copy that fails here is left to the resumed task, which fails or
    succeeds with a typed error of its own.

    :param checkpoint: the job's checkpoint location (path or fsspec URL).
    :param requested_at_ms: when the stop request was made (epoch ms): the driver's answer to
        it is a stopped report written after it.
    :param timeout_s: the drain bound: how long the trigger waits for the answer before its
        "timeout" event, in seconds.
    :param job_ref: the driver's job reference (a dict), for its backend's view of the driver
        (None: the control folder alone).
    :param poll_interval_s: seconds between reads of the control folder.
    :param aws_conn_id: an official-provider ``aws`` connection for a checkpoint or
        savepoints on S3.
    :param awaited_restart: the driver held no lease when the stop began but its backend
        listed it (starting again): if it ends without running after the request, the event
        is "not_running".
    :param savepoint_root: take the stopped job's savepoint here before the "stopped" event
        (None: no savepoint in the trigger).
    :param job_name: the job's name, for that savepoint.
    """

    def __init__(
        self,
        checkpoint: str,
        requested_at_ms: int,
        timeout_s: float,
        job_ref: dict[str, Any] | None = None,
        poll_interval_s: float = 2.0,
        aws_conn_id: str | None = None,
        awaited_restart: bool = False,
        savepoint_root: str | None = None,
        job_name: str | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.checkpoint = checkpoint
        self.requested_at_ms = requested_at_ms
        self.timeout_s = timeout_s
        self.job_ref = job_ref
        self.poll_interval_s = poll_interval_s
        self.aws_conn_id = aws_conn_id
        self.awaited_restart = awaited_restart
        self.savepoint_root = savepoint_root
        self.job_name = job_name

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            "airflow_provider_kafkaspark.triggers.stop.StreamingStopTrigger",
            {
                "checkpoint": self.checkpoint,
                "requested_at_ms": self.requested_at_ms,
                "timeout_s": self.timeout_s,
                "job_ref": self.job_ref,
                "poll_interval_s": self.poll_interval_s,
                "aws_conn_id": self.aws_conn_id,
                "awaited_restart": self.awaited_restart,
                "savepoint_root": self.savepoint_root,
                "job_name": self.job_name,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
        from airflow_provider_kafkaspark.errors import KafkaSparkError
        from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

        deadline = time.monotonic() + self.timeout_s
        try:
            # A connection lookup may block: read it in a thread, once.
            options = await asyncio.to_thread(
                KafkaSparkHook(aws_conn_id=self.aws_conn_id).s3fs_options
            )
        except KafkaSparkError as exc:
            yield _event({"state": "gone", "reason": f"cannot read the AWS connection: {exc}"})
            return
        # This trigger's own scope (the triggerer runs each trigger in its own task);
        # asyncio.to_thread carries it into every poll. The event is yielded outside it: the
        # generator may be closed from another task (another context), where leaving the
        # scope would fail.
        with s3_options_scope(options):
            event = await self._outcome(deadline)
        yield event

    async def _outcome(self, deadline: float) -> TriggerEvent:
        from airflow_provider_kafkaspark.core.cluster.job_ref import job_ref_from_dict
        from airflow_provider_kafkaspark.errors import KafkaSparkError
        from airflow_provider_kafkaspark.lifecycle.stop import StopOutcome, poll_stop

        # The one stop loop's step (lifecycle/stop.py), with an async sleep between polls.
        while True:
            try:
                ref = None if self.job_ref is None else job_ref_from_dict(self.job_ref)
                step = await asyncio.to_thread(
                    poll_stop,
                    self.checkpoint,
                    self.requested_at_ms,
                    ref,
                    self.awaited_restart,
                    bound_passed=time.monotonic() > deadline,
                )
            except KafkaSparkError as exc:
                return _event({"state": "gone", "reason": str(exc)})
            if step.outcome in (StopOutcome.GONE, StopOutcome.NOT_RUNNING, StopOutcome.TIMEOUT):
                return _event({"state": step.outcome.value, "reason": step.reason})
            if step.outcome is StopOutcome.STOPPED and step.report is not None:
                stopped = step.report
                payload: dict[str, Any] = {
                    "state": "stopped",
                    "reason": stopped.reason,
                    "clean": stopped.clean,
                    "last_planned_batch": stopped.last_planned_batch,
                    "last_committed_batch": stopped.last_committed_batch,
                }
                return _event({**payload, **await self._savepoint()})
            await asyncio.sleep(self.poll_interval_s)

    async def _savepoint(self) -> dict[str, Any]:
        """The stopped job's savepoint, taken here: its id, or why it is left to the task."""
        from airflow_provider_kafkaspark.errors import KafkaSparkError
        from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop
        from airflow_provider_kafkaspark.versions import SPARK_VERSION

        if not (self.savepoint_root and self.job_name):
            return {}
        try:
            manifest = await asyncio.to_thread(
                savepoint_after_stop,
                self.checkpoint,
                self.savepoint_root,
                self.job_name,
                spark_version=SPARK_VERSION,
            )
        except KafkaSparkError as exc:
            self.log.warning("savepoint left to the resumed task: %s", exc)
            return {"savepoint_error": str(exc)}
        return {"savepoint_id": manifest.savepoint_id}


def _event(payload: dict[str, Any]) -> TriggerEvent:
    return TriggerEvent(payload)  # type: ignore[no-untyped-call]
