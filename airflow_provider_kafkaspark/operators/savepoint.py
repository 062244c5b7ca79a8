"""SavepointStreamingJobOperator: a savepoint of a running job, without stopping it."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator, Context

from airflow_provider_kafkaspark.assets import savepoints_alias
from airflow_provider_kafkaspark.operators.stop import (
    announce_savepoint,
    report_savepoint,
    savepoint_outlets,
)


class SavepointStreamingJobOperator(BaseOperator):
    """Copy a running job's checkpoint as of its last committed batch into a savepoint, while
    the job keeps running (`core/state/running_copy.py`), for a schedule of periodic
    savepoints. Then, when ``max_count`` or ``max_age_s`` is given, retention: the job's
    savepoints and the restore backups beside its checkpoint beyond that policy are disposed
    (never the newest savepoint, one marked in use, or one in ``keep``).

    Returns the savepoint's small summary (each key its own XCom too, as the stop operator's:
    ``savepoint_id``, ``savepoint``, ``retention``) and emits an event on
    ``savepoint_asset(job_name)``, as the stop operator does. Fails without retry before the
    job's first committed batch (`NothingCommittedError`): there is nothing to copy yet.
    Metrics (``operator_metrics.py``): ``savepoints`` and ``savepoint_bytes``.

    :param checkpoint: the running job's checkpoint location. Templated.
    :param job_name: the job's name (its spec's ``job_name``). Templated.
    :param savepoint_root: where the savepoint goes (a path or URL). Templated.
    :param aws_conn_id: an official-provider ``aws`` connection for a checkpoint or
        savepoints on S3 (without one, the standard AWS variables and files apply).
    :param max_count: retention: keep at most this many of the job's savepoints (None: no
        count limit).
    :param max_age_s: retention: dispose of the job's savepoints older than this, in seconds
        (None: no age limit).
    :param keep: savepoint ids retention never disposes of.
    """

    template_fields: Sequence[str] = ("checkpoint", "job_name", "savepoint_root")
    ui_color = "#fdeee8"

    def __init__(
        self,
        *,
        checkpoint: str,
        job_name: str,
        savepoint_root: str,
        aws_conn_id: str | None = None,
        max_count: int | None = None,
        max_age_s: float | None = None,
        keep: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        from airflow_provider_kafkaspark.core.state.savepoint import RetentionPolicy

        kwargs.setdefault("outlets", savepoint_outlets(job_name) or [savepoints_alias()])
        kwargs.setdefault("multiple_outputs", True)
        super().__init__(**kwargs)
        self.checkpoint = checkpoint
        self.job_name = job_name
        self.savepoint_root = savepoint_root
        self.aws_conn_id = aws_conn_id
        self.max_count = max_count
        self.max_age_s = max_age_s
        self.keep = tuple(keep)
        # Checked when the DAG is parsed, not at the first run.
        RetentionPolicy(max_count=max_count, max_age_s=max_age_s)

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_kafkaspark.airflow_errors import airflow_errors

        with airflow_errors(self.task_id), self._storage():
            return self._savepoint(context)

    def _storage(self) -> contextlib.AbstractContextManager[None]:
        from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

        return KafkaSparkHook(aws_conn_id=self.aws_conn_id).storage()

    def _savepoint(self, context: Context) -> dict[str, Any]:
        from airflow_provider_kafkaspark.core.spec.jobspec import valid_job_name
        from airflow_provider_kafkaspark.core.state.savepoint import RetentionPolicy
        from airflow_provider_kafkaspark.errors import InvalidArgumentError
        from airflow_provider_kafkaspark.lifecycle.savepoint import savepoint_of_running

        if not valid_job_name(self.job_name):
            raise InvalidArgumentError(
                f"{self.task_id}: job_name {str(self.job_name)[:120]!r}: letters, digits, "
                f"'.', '_' and '-' only (as in the job spec)"
            )
        policy = None
        if self.max_count is not None or self.max_age_s is not None:
            policy = RetentionPolicy(max_count=self.max_count, max_age_s=self.max_age_s)
        manifest, retention = savepoint_of_running(
            self.checkpoint,
            self.savepoint_root,
            self.job_name,
            policy=policy,
            keep=frozenset(self.keep),
        )
        self.log.info(
            "savepoint %s of the running job, at committed batch %s",
            manifest.savepoint_id,
            manifest.last_committed_batch,
        )
        # After retention: the count is what the root keeps.
        report_savepoint(self.savepoint_root, self.job_name, manifest.total_bytes)
        if retention is not None:
            self.log.info(
                "retention: disposed savepoints %s, restore backups %s",
                retention["savepoints"]["disposed"],
                (retention["backups"] or {}).get("disposed", []),
            )
        announce_savepoint(
            self,
            context,
            self.job_name,
            {
                "savepoint_id": manifest.savepoint_id,
                "savepoint_root": self.savepoint_root,
                "last_committed_batch": manifest.last_committed_batch,
            },
        )
        return {
            "job_name": self.job_name,
            "savepoint_root": self.savepoint_root,
            "savepoint_id": manifest.savepoint_id,
            "savepoint": manifest.summary(),
            "retention": retention,
        }
