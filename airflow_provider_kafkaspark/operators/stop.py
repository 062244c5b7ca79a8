"""StopStreamingJobOperator: graceful stop, then a savepoint, announced as an Asset event."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.configuration import conf
from airflow.sdk import Asset, AssetAlias, BaseOperator, Context

from airflow_provider_kafkaspark.assets import savepoint_asset, savepoints_alias
from airflow_provider_kafkaspark.core.spec.jobspec import valid_job_name
from airflow_provider_kafkaspark.links import job_links

if TYPE_CHECKING:
    from airflow.sdk import XComArg

    from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef
    from airflow_provider_kafkaspark.core.control.reports import StoppedReport

__all__ = ["StopStreamingJobOperator", "savepoint_asset"]

SAVEPOINT_ALLOWANCE_S = 900.0


def _is_template(value: str) -> bool:
    return "{{" in value or "{%" in value


def savepoint_outlets(job_name: str) -> list[Asset | AssetAlias]:
    """What a stop operator declares: the job's savepoint Asset, or, when the job name is a
    template (known only once rendered), the `kafkaspark-savepoints` alias that the rendered
    job's Asset is attached to at run time. Airflow renders no outlets, so a declared Asset
    built from the template's text would name another Asset than the one emitted."""
    if _is_template(job_name):
        return [savepoints_alias()]
    if not valid_job_name(job_name):
        return []  # no Asset can carry it; execute fails naming job_name, before any stop
    return [savepoint_asset(job_name)]


class StopStreamingJobOperator(BaseOperator):
    """Stop a streaming job through its control folder and keep a savepoint.

    The job is named by ``handle`` (the submit operator's output: its ``job_ref`` names the
    job, its checkpoint and where its driver runs) or by ``checkpoint`` and ``job_name``.
    Waits for the driver's `stopped.json` (the batch in flight drains first), in the task or,
    with ``deferrable=True``, in the triggerer (`StreamingStopTrigger`). After
    ``drain_timeout_s`` the driver is killed only if ``allow_force_kill``, through its backend
    (a local process only from the host that started it, a YARN application through its
    ResourceManager); Spark then re-runs the interrupted batch on restore. Returns the
    savepoint's small summary and emits an event on ``savepoint_asset(job_name)`` (through
    the ``kafkaspark-savepoints`` alias when the name comes from the handle).

    Links from the task instance (``links.py``): the stopped driver's YARN application and
    its tracking URL (the history server's page, where one is configured), the job's page.
    Metrics (``operator_metrics.py``): ``stops``; after a savepoint, ``savepoints`` and
    ``savepoint_bytes``.

    :param savepoint_root: where the savepoint goes (a path or URL). Templated.
    :param checkpoint: the job's checkpoint location, with ``job_name``, when there is no
        ``handle`` (default: the handle's). Templated.
    :param job_name: the job's name (its spec's ``job_name``), with ``checkpoint``, when there
        is no ``handle`` (default: the handle's). Templated.
    :param handle: the submit or deploy operator's output (a dict, or its JSON). Templated.
    :param drain_timeout_s: how long the driver may take to drain the batch in flight and
        stop, in seconds (default 120); after it, the stop fails unless ``allow_force_kill``.
    :param allow_force_kill: after ``drain_timeout_s``, kill the driver through its backend
        (default False: the task then fails, saying the driver did not stop in time).
    :param at_batch_boundary: stop once the batch in flight has committed instead of waiting
        for a moment with no batch in flight, which a job that is behind may not have for many
        batches. A batch Spark has already planned is then cut short and stays in the
        savepoint as a pending batch: a ``checkpoint``-mode restore runs it again exactly
        once, an ``offsets``-mode restore refuses it. Use it when the restore that follows is
        in ``checkpoint`` mode (a restart window). Ignored for Spark's at-least-once Kafka
        sink.
    :param take_savepoint: take the savepoint after the stop (default True; False: stop only).
    :param deferrable: wait for the driver in the triggerer instead of a worker slot
        (default: Airflow's ``[operators] default_deferrable``).
    :param poll_interval_s: seconds between reads of the control folder while waiting.
    :param aws_conn_id: an official-provider ``aws`` connection for a checkpoint or
        savepoints on S3 (also used by the trigger).
    :param wait_in_task_s: with ``deferrable=True``, how long the task itself waits for the
        driver's answer before it defers (default 10 s, 0 defers at once): most stops end
        within it, without a round trip through the triggerer.
    """

    template_fields: Sequence[str] = ("checkpoint", "job_name", "savepoint_root", "handle")
    ui_color = "#fdeee8"
    operator_extra_links = tuple(job_links())

    def __init__(
        self,
        *,
        savepoint_root: str,
        checkpoint: str | None = None,
        job_name: str | None = None,
        handle: dict[str, Any] | str | XComArg | None = None,
        drain_timeout_s: float = 120.0,
        allow_force_kill: bool = False,
        at_batch_boundary: bool = False,
        take_savepoint: bool = True,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval_s: float = 2.0,
        aws_conn_id: str | None = None,
        wait_in_task_s: float = 10.0,
        **kwargs: Any,
    ) -> None:
        from airflow_provider_kafkaspark.errors import InvalidArgumentError

        if handle is None and not (checkpoint and job_name):
            raise InvalidArgumentError(
                f"{kwargs.get('task_id')}: give handle (the submit's output, whose job_ref names "
                f"the job and its checkpoint), or checkpoint and job_name"
            )
        # A job named only by the handle is known at run time: the alias carries its Asset.
        kwargs.setdefault(
            "outlets", savepoint_outlets(job_name) if job_name else [savepoints_alias()]
        )
        # Each key of the result is its own XCom too: stop.output["savepoint_id"].
        kwargs.setdefault("multiple_outputs", True)
        super().__init__(**kwargs)
        # "" until the handle's reference names them (at run time).
        self.checkpoint = checkpoint or ""
        self.job_name = job_name or ""
        self.savepoint_root = savepoint_root
        self.handle = handle
        self.drain_timeout_s = drain_timeout_s
        self.allow_force_kill = allow_force_kill
        self.at_batch_boundary = at_batch_boundary
        self.take_savepoint = take_savepoint
        self.deferrable = deferrable
        self.poll_interval_s = poll_interval_s
        self.aws_conn_id = aws_conn_id
        self.wait_in_task_s = wait_in_task_s
        # The driver the handle names, for the links (set once the handle is read).
        self._driver_ref: JobRef | None = None

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_kafkaspark.airflow_errors import airflow_errors

        with airflow_errors(self.task_id), self._storage():
            return self._stop(context)

    def _storage(self) -> contextlib.AbstractContextManager[None]:
        from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

        return KafkaSparkHook(aws_conn_id=self.aws_conn_id).storage()

    def _stop(self, context: Context) -> dict[str, Any]:
        from airflow_provider_kafkaspark.core.cluster.job_ref import job_ref_to_dict
        from airflow_provider_kafkaspark.lifecycle.stop import (
            StopOutcome,
            begin_stop,
            finished_stop,
            wait_for_stop,
        )

        # After rendering, before anything is written: all three are templated.
        ref = self._job_ref()
        self._check_job_name()
        self._link(context, None)  # the job's page, whatever happens next
        requested_by = self._requested_by(context)
        started = begin_stop(
            self.checkpoint,
            requested_by=requested_by,
            reason="stop operator",
            drain_timeout_s=self.drain_timeout_s,
            ref=ref,
            at_batch_boundary=self.at_batch_boundary,
        )
        if started is None:
            # Nothing runs: perhaps because an earlier try of this task stopped it.
            earlier = finished_stop(self.checkpoint, requested_by)
            return self._finish(context, earlier, stopped_now=False)
        request, wait_s = started.request, started.wait_s
        if self.deferrable and self.wait_in_task_s > 0:
            # A driver at a batch boundary answers within seconds: waiting that long here
            # spares the triggerer a round trip, and spares the task a trigger that fires
            # before its worker has reported the deferral (Airflow's Edge executor then
            # fails a task it sees queued again).
            import dataclasses
            import time

            begun = time.monotonic()
            brief = dataclasses.replace(started, wait_s=min(wait_s, self.wait_in_task_s))
            step = wait_for_stop(self.checkpoint, brief, poll_s=self.poll_interval_s)
            if step.outcome is StopOutcome.STOPPED:
                return self._finish(context, step.report)
            if step.outcome is StopOutcome.NOT_RUNNING:
                return self._finish(context, None)
            if wait_s <= self.wait_in_task_s:
                return self._after_timeout(context, ref)
            wait_s = max(1.0, wait_s - (time.monotonic() - begun))
        if self.deferrable:
            from datetime import timedelta

            from airflow_provider_kafkaspark.triggers.stop import StreamingStopTrigger

            self.defer(
                trigger=StreamingStopTrigger(
                    checkpoint=self.checkpoint,
                    requested_at_ms=request.requested_at_ms,
                    timeout_s=wait_s,
                    job_ref=None if started.ref is None else job_ref_to_dict(started.ref),
                    awaited_restart=started.awaited_restart,
                    poll_interval_s=self.poll_interval_s,
                    aws_conn_id=self.aws_conn_id,
                    savepoint_root=self.savepoint_root if self.take_savepoint else None,
                    job_name=self.job_name,
                ),
                method_name="execute_complete",
                # The trigger also copies the savepoint: minutes for a large state on S3.
                timeout=timedelta(seconds=wait_s + 120 + SAVEPOINT_ALLOWANCE_S),
            )
        # The one stop loop (lifecycle/stop.py), the trigger's and the CLI's too.
        step = wait_for_stop(self.checkpoint, started, poll_s=self.poll_interval_s)
        if step.outcome is StopOutcome.TIMEOUT:
            return self._after_timeout(context, ref)
        return self._finish(context, step.report)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowFailException

        from airflow_provider_kafkaspark.airflow_errors import airflow_errors
        from airflow_provider_kafkaspark.core.control.folder import ControlFolder

        state = event.get("state")
        with airflow_errors(self.task_id), self._storage():
            ref = self._job_ref()  # names the job when only the handle did
            if state == "stopped":
                return self._finish(context, ControlFolder(self.checkpoint).read_stopped())
            if state == "not_running":
                return self._finish(context, None)
            if state == "timeout":
                return self._after_timeout(context, ref)
        raise AirflowFailException(f"stop of {self.job_name} failed: {event.get('reason')}")

    def _job_ref(self) -> JobRef | None:
        """The driver's reference from `handle`: the submit operator's XCom (its `job_ref`),
        a job reference itself, or a handle naming a pid of this host (older submits). A
        checkpoint or job name not given is the reference's."""
        import socket

        from airflow_provider_kafkaspark.core.cluster.job_ref import (
            check_ref_names,
            ref_from_handle,
        )
        from airflow_provider_kafkaspark.core.spec.xcom_values import parse_mapping
        from airflow_provider_kafkaspark.errors import InvalidArgumentError, InvalidInputError

        where = f"{self.task_id}: handle"
        try:
            handle = parse_mapping(self.handle, where, "the submit operator's handle (a dict)")
        except InvalidInputError as exc:
            raise InvalidArgumentError(str(exc)) from None
        ref = ref_from_handle(
            handle,
            job_name=self.job_name,
            checkpoint=self.checkpoint,
            host=socket.gethostname(),
            where=where,
        )
        if not (self.checkpoint and self.job_name):
            # Only a job reference carries names; a pid-only handle has the ones given here.
            if ref is None or not (ref.job_name and ref.checkpoint):
                raise InvalidArgumentError(
                    f"{where}: no job_ref in it, so give checkpoint and job_name"
                )
            self.checkpoint = self.checkpoint or ref.checkpoint
            self.job_name = self.job_name or ref.job_name
        if ref is not None:
            check_ref_names(ref, job_name=self.job_name, checkpoint=self.checkpoint, where=where)
        self._driver_ref = ref
        return ref

    def _requested_by(self, context: Context) -> str:
        """Who the stop request names, down to the DAG run: the driver's report carries it,
        and a retry of this task (same run) recognises its earlier try's stop by it, where
        the same task of another run must not."""
        run_id = context.get("run_id")
        base = f"airflow:{self.dag_id}.{self.task_id}"
        return f"{base}:{run_id}" if run_id else base

    def _check_job_name(self) -> None:
        from airflow_provider_kafkaspark.core.spec.jobspec import valid_job_name
        from airflow_provider_kafkaspark.errors import InvalidArgumentError

        if not valid_job_name(self.job_name):
            raise InvalidArgumentError(
                f"{self.task_id}: job_name {str(self.job_name)[:120]!r}: letters, digits, "
                f"'.', '_' and '-' only (as in the job spec)"
            )

    def _after_timeout(self, context: Context, ref: JobRef | None) -> dict[str, Any]:
        from airflow_provider_kafkaspark.lifecycle.stop import force_stop

        force_stop(self.checkpoint, self.drain_timeout_s, ref, self.allow_force_kill)
        self._count_stop()  # killed, or gone by itself meanwhile: not running either way
        return self._finish(context, None)

    def _count_stop(self) -> None:
        from airflow_provider_kafkaspark.operator_metrics import count

        count(self.job_name, {"stops": 1})

    def _link(self, context: Context, ref: JobRef | None) -> None:
        """The links: the job's page, and the stopped driver's pages when `ref` names it."""
        from airflow_provider_kafkaspark.lifecycle.web_pages import observed_pages
        from airflow_provider_kafkaspark.links import api_base_url, link_targets, persist_links

        pages = observed_pages(ref, running=False)
        targets = link_targets(self.job_name, pages, api_base_url(), self.checkpoint)
        persist_links(context, self, targets)

    def _stopped_driver(self) -> JobRef | None:
        """The driver the handle named, else the one the checkpoint's last submit records."""
        from airflow_provider_kafkaspark.errors import KafkaSparkError
        from airflow_provider_kafkaspark.lifecycle.observe import submitted_ref

        if self._driver_ref is not None:
            return self._driver_ref
        try:
            return submitted_ref(self.checkpoint)
        except (KafkaSparkError, OSError) as exc:
            self.log.warning("no driver links: the checkpoint's last submit: %s", exc)
            return None

    def _finish(
        self, context: Context, stopped: StoppedReport | None, *, stopped_now: bool = True
    ) -> dict[str, Any]:
        """The result, the links, the metrics and the savepoint. `stopped_now`: False when
        the report is an earlier try's (that try counted the stop)."""
        from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop
        from airflow_provider_kafkaspark.versions import SPARK_VERSION

        result: dict[str, Any] = {
            "job_name": self.job_name,
            "checkpoint": self.checkpoint,
            "savepoint_root": self.savepoint_root if self.take_savepoint else None,
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
            if stopped_now:
                self._count_stop()
        self._link(context, self._stopped_driver())
        if self.take_savepoint:
            manifest = savepoint_after_stop(
                self.checkpoint, self.savepoint_root, self.job_name, spark_version=SPARK_VERSION
            )
            result["savepoint"] = manifest.summary()
            result["savepoint_id"] = manifest.savepoint_id
            self.log.info("savepoint %s created", manifest.savepoint_id)
            report_savepoint(self.savepoint_root, self.job_name, manifest.total_bytes)
            self._announce(
                context,
                {
                    "savepoint_id": manifest.savepoint_id,
                    "savepoint_root": self.savepoint_root,
                    "last_committed_batch": manifest.last_committed_batch,
                },
            )
        return result

    def _announce(self, context: Context, extra: dict[str, Any]) -> None:
        announce_savepoint(self, context, self.job_name, extra)


def report_savepoint(savepoint_root: str, job_name: str, savepoint_bytes: int) -> None:
    """The savepoint metrics: the new one's size, the job's complete savepoints now."""
    from airflow_provider_kafkaspark.operator_metrics import count_savepoints, savepoint_gauges

    savepoint_gauges(
        job_name,
        savepoints=count_savepoints(savepoint_root, job_name),
        savepoint_bytes=savepoint_bytes,
    )


def announce_savepoint(
    operator: BaseOperator, context: Context, job_name: str, extra: dict[str, Any]
) -> None:
    """The savepoint event, on the rendered job's Asset: directly when it is a declared
    outlet of `operator`, through its first declared alias otherwise."""
    asset = savepoint_asset(job_name)
    if asset in operator.outlets:
        context["outlet_events"][asset].extra = extra
        return
    alias = next((o for o in operator.outlets if isinstance(o, AssetAlias)), None)
    if alias is None:
        operator.log.warning(
            "no savepoint event: %s is not among this task's outlets and no AssetAlias is",
            asset.uri,
        )
        return
    context["outlet_events"][alias].add(asset, extra=extra)
    operator.log.info("savepoint event on %s (through alias %s)", asset.uri, alias.name)
