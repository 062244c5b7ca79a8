"""`StreamingWatchSensor`: watch a running streaming job for as long as it runs, and page when
its lag or commit-age SLO is breached and when the breach clears.

The decisions are `core/health/slo.py` (the SLOs and when to page) and
`core/health/slo_watch.py` (whether the driver is still there); this class reads the
connections and the context, calls the notifiers, emits the metrics and hands the summary to
XCom. Deferrable: the trigger polls and fires at each alert; `execute_complete` announces it
and defers again with the state the trigger carried, so a watch of a day costs the worker a
few seconds per alert. Poke mode holds a worker slot for as long as it watches, and keeps its
state on the sensor instance, so `reschedule` mode (a new instance per poke) is not offered.

Only Airflow and the pure core are imported here; the Kafka modules load inside methods.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from airflow.configuration import conf
from airflow.sdk import BaseNotifier, BaseSensorOperator, Context, PokeReturnValue
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_provider_kafkaspark import metrics
from airflow_provider_kafkaspark.core.health.slo import SloAlert, SloState
from airflow_provider_kafkaspark.core.health.slo_watch import (
    SloWatch,
    WatcherEvent,
    WatcherSettings,
    job_name_of,
    watch_summary,
)
from airflow_provider_kafkaspark.core.spec.args import with_poll_interval
from airflow_provider_kafkaspark.core.spec.xcom_values import parse_batch_id
from airflow_provider_kafkaspark.errors import InvalidArgumentError, InvalidInputError
from airflow_provider_kafkaspark.notifiers import ALERT_KEY, JOB_KEY

if TYPE_CHECKING:
    from airflow.sdk import XComArg

    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
    from airflow_provider_kafkaspark.triggers.watch import StatusLog

Notifier = BaseNotifier | Callable[[Context], Any]
# A watch of a day: the example DAG runs daily, so one watch ends as the next one starts.
DEFAULT_TIMEOUT_S = 24 * 3600.0
# The task-level timeout of a deferral beyond the watch's own end: the trigger normally ends
# first, with a "timeout" event that says what it last saw.
_DEFER_SLACK_S = 120.0
_DEFAULT_POLL_S = 30.0


class StreamingWatchSensor(BaseSensorOperator):
    """Watch a running job's SLOs; call `on_breach` / `on_clear` when they break and mend.

    It ends (succeeds, returning a summary to XCom) when the driver stops cleanly and no new
    driver takes over within `restart_grace_s` (a maintenance stop; a restart window's new
    driver is followed), and when its `timeout` is up (the watch period is over: the next
    scheduled run watches on; a sensor timeout is not a failure of the job). It fails, naming
    why, when the driver is gone otherwise: a stop that was not clean, a bad job, a lease
    released or expired without a stopped report, no driver after `startup_grace_s`, the
    local supervisor giving up (an `AirflowException`, so the task's retries start a new watch
    that follows a restarted driver; bad input is an `AirflowFailException`). The summary:
    ``{"state": "stopped" | "timeout", "reason", "breaches", "in_breach", "breached_slos",
    "lag_records", "commit_age_s", "latest_committed", "watched_s"}``.

    Each announcement calls every notifier of its kind with the task context plus
    ``slo_alert`` (the alert as a dict; see `notifiers`) and ``kafkaspark_job``: an Airflow
    notifier (`airflow.sdk.BaseNotifier`, e.g. the SMTP or Slack provider's; a fresh copy
    each time, so its templates render for this alert) or a callable taking the context. A
    notifier that raises is logged and the watch goes on.

    :param checkpoint: checkpoint location (path or fsspec URL). Templated.
    :param handle: the submit or deploy operator's output instead: its ``checkpoint``,
        ``job_name`` and ``since_batch`` apply unless given here. Templated.
    :param job_name: the name in the metrics (``kafkaspark.<job>.*``) and the alerts;
        default the handle's, else the checkpoint's folder (``.../<job>/checkpoint``).
        Templated.
    :param kafka_conn_id: an official-provider `kafka` connection. Templated.
    :param aws_conn_id: an official-provider ``aws`` connection for a checkpoint on S3.
    :param max_lag_records: the lag SLO: records not yet read, summed over the topics.
    :param max_commit_age_s: the commit-age SLO: how long records may wait without a batch
        committing (an idle topic is never in breach). At least one SLO is needed.
    :param breach_after_s: how long an SLO must be failing before the breach is announced
        (default 0: at the first poll that sees it).
    :param clear_after_s: how long every SLO must be met before the all-clear (default 60).
    :param renotify_after_s: while a breach goes on, announce it again after this long, then
        after twice that, and so on (None: announce once).
    :param renotify_max_s: the longest wait between two announcements of one breach.
    :param on_breach: notifiers (or callables) for each breach announcement.
    :param on_clear: notifiers (or callables) for each all-clear.
    :param poll_interval_s: seconds between polls: another name for `poke_interval`, which
        the trigger follows too (default 30).
    :param startup_grace_s: how long no driver may hold the checkpoint's lease before that
        fails the watch.
    :param restart_grace_s: after a clean stop, how long to wait for a new driver (a restart
        window, a handover) before the watch ends (default 300).
    :param kafka_timeout_s: budget of each Kafka request; a poll Kafka does not answer in
        time has an unknown lag, which neither breaches nor clears.
    :param deferrable: wait in the triggerer instead of a worker slot (default: Airflow's
        `[operators] default_deferrable`; a watcher should defer).
    :param kwargs: Airflow's ``BaseSensorOperator`` arguments. Its ``timeout`` is how long one
        watch lasts, in seconds: 24 h by default here.
    """

    template_fields: Sequence[str] = ("checkpoint", "handle", "job_name", "kafka_conn_id")
    valid_modes: Sequence[str] = ("poke",)
    ui_color = "#fdebd0"

    def __init__(
        self,
        *,
        checkpoint: str | None = None,
        handle: dict[str, Any] | str | XComArg | None = None,
        job_name: str | None = None,
        kafka_conn_id: str = "kafka_default",
        aws_conn_id: str | None = None,
        max_lag_records: int | None = None,
        max_commit_age_s: float | None = None,
        breach_after_s: float = 0.0,
        clear_after_s: float = 60.0,
        renotify_after_s: float | None = 1800.0,
        renotify_max_s: float = 4 * 3600.0,
        on_breach: Notifier | Sequence[Notifier] | None = None,
        on_clear: Notifier | Sequence[Notifier] | None = None,
        poll_interval_s: float | None = None,
        startup_grace_s: float = 60.0,
        restart_grace_s: float = 300.0,
        kafka_timeout_s: float = 10.0,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        **kwargs: Any,
    ) -> None:
        with_poll_interval(kwargs, poll_interval_s, _DEFAULT_POLL_S)
        kwargs.setdefault("timeout", DEFAULT_TIMEOUT_S)
        super().__init__(**kwargs)
        if not checkpoint and handle is None:
            raise InvalidArgumentError(
                f"{self.task_id}: give checkpoint, or handle (the submit operator's output)"
            )
        self.checkpoint = checkpoint or ""  # "" until the handle names it, at run time
        self.handle = handle
        self.job_name = job_name or ""
        self.kafka_conn_id = kafka_conn_id
        self.aws_conn_id = aws_conn_id
        self.deferrable = deferrable
        self.since_batch: int | None = None
        self.on_breach = _notifiers(on_breach, f"{self.task_id}: on_breach")
        self.on_clear = _notifiers(on_clear, f"{self.task_id}: on_clear")
        self.settings = WatcherSettings.checked(
            self.task_id,
            max_lag_records=max_lag_records,
            max_commit_age_s=max_commit_age_s,
            breach_after_s=breach_after_s,
            clear_after_s=clear_after_s,
            renotify_after_s=renotify_after_s,
            renotify_max_s=renotify_max_s,
            poll_interval_s=float(self.poke_interval),
            startup_grace_s=startup_grace_s,
            restart_grace_s=restart_grace_s,
            kafka_timeout_s=kafka_timeout_s,
        )
        self._watch: SloWatch | None = None
        self._status: StatusLog | None = None
        self._started = 0.0  # time.monotonic() when poke mode started watching
        self._kafka: KafkaFacade | None = None
        self._storage_hook: KafkaSparkHook | None = None

    # -- inputs ------------------------------------------------------------------------------

    def apply_handle(self) -> None:
        """Take the checkpoint, job name and since_batch from `handle` where not given (after
        rendering); the job name falls back to the checkpoint's folder."""
        from airflow_provider_kafkaspark.core.spec.xcom_values import submit_handle

        where = f"{self.task_id}.handle"
        try:
            handle, self.checkpoint = submit_handle(self.handle, self.checkpoint, where)
            if handle is not None:
                if not self.job_name and isinstance(handle.get("job_name"), str):
                    self.job_name = handle["job_name"]
                self.since_batch = parse_batch_id(handle.get("since_batch"), f"{where}.since_batch")
        except InvalidInputError as exc:
            raise AirflowFailException(str(exc)) from exc
        self.job_name = self.job_name or job_name_of(self.checkpoint)

    # -- execution ---------------------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        self.apply_handle()
        self.log.info(
            "watching %s (%s): %s, polled every %g s for %g s",
            self.job_name,
            self.checkpoint,
            self.settings.slo.describe(),
            self.settings.poll_interval_s,
            float(self.timeout),
        )
        if self.deferrable:
            self._defer(None, 0.0)
        self._watch = None  # a new execution watches from scratch
        self._started = time.monotonic()
        try:
            return super().execute(context)
        finally:
            self.close()

    def poke(self, context: Context) -> PokeReturnValue:
        from airflow_provider_kafkaspark.airflow_errors import airflow_errors
        from airflow_provider_kafkaspark.core.control.lease import now_ms
        from airflow_provider_kafkaspark.triggers.watch import (
            StatusLog,
            emit_metrics,
            read_watcher_inputs,
        )

        if self._watch is None:
            self._watch = SloWatch(self.settings, self.since_batch)
            self._status = StatusLog(self.log, self.job_name)
        watch = self._watch
        with airflow_errors(f"cannot observe {self.checkpoint}", self.kafka_conn_id):
            if self._storage_hook is None:
                from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

                self._storage_hook = KafkaSparkHook(aws_conn_id=self.aws_conn_id)
            with self._storage_hook.storage():
                inputs = read_watcher_inputs(self.checkpoint, self._kafka_facade())
        step = watch.poll(inputs, now_ms())
        watched_s = time.monotonic() - self._started
        if step.state in ("watching", "alert"):
            emit_metrics(self.job_name, watch, inputs)
        if step.state == "watching":
            if self._status is not None:
                self._status.watching(step, inputs.lag_commits_failing)
            result = PokeReturnValue(False)
        else:
            result = self._act(context, step.state, step.reason, step.alert, watch.state, watched_s)
        # Ended here rather than by BaseSensorOperator's timeout: the watch's time being up is
        # its normal end (its clock started before the base class's, so it ends first).
        if not result.is_done and watched_s >= float(self.timeout):
            return self._end("timeout", "the watch's time is up", watch.state, watched_s)
        return result

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger: announce an alert and defer again, or end."""
        from airflow_provider_kafkaspark.core.control.lease import now_ms

        self.apply_handle()
        if event is None:
            raise AirflowException(f"{self.task_id}: the watch trigger sent no event")
        try:
            resumed = WatcherEvent.from_dict(event)
            state = SloState.from_dict(resumed.slo_state, now_ms())
        except InvalidInputError as exc:
            raise AirflowException(f"{self.task_id}: {exc}") from exc
        result = self._act(
            context, resumed.state, resumed.reason, resumed.alert, state, resumed.watched_s
        )
        if result.is_done:
            return result.xcom_value
        if resumed.watched_s >= float(self.timeout):
            ended = self._end("timeout", "the watch's time is up", state, resumed.watched_s)
            return ended.xcom_value
        self._defer(resumed.slo_state, resumed.watched_s)

    def close(self) -> None:
        if self._kafka is not None:
            self._kafka.close()
            self._kafka = None

    # -- internals ---------------------------------------------------------------------------

    def _act(
        self,
        context: Context,
        state: str,
        reason: str,
        alert: SloAlert | None,
        slo: SloState,
        watched_s: float,
    ) -> PokeReturnValue:
        if state == "alert":
            if alert is None:
                raise AirflowException(f"{self.task_id}: an alert event without its alert")
            self.announce(context, alert, slo)
            return PokeReturnValue(False)
        if state in ("stopped", "timeout"):
            return self._end(state, reason, slo, watched_s)
        if state == "invalid":
            raise AirflowFailException(f"{self.job_name}: {reason}")
        # The driver is gone: retryable, so that a retry follows a driver that its supervisor
        # or a person restarts (a job gone for good fails again at the retry's first poll or
        # after its startup grace).
        raise AirflowException(f"{self.job_name}: {reason}")

    def _end(self, state: str, reason: str, slo: SloState, watched_s: float) -> PokeReturnValue:
        summary = watch_summary(state, reason, slo, watched_s)
        breach = f"; still in breach ({', '.join(slo.breached_slos)})" if slo.breached else ""
        self.log.info(
            "watch of %s ends (%s) after %.0f s, %d breach(es)%s: %s",
            self.job_name,
            state,
            watched_s,
            slo.breaches,
            breach,
            reason,
        )
        return PokeReturnValue(True, summary)

    def announce(self, context: Context, alert: SloAlert, slo: SloState) -> None:
        """Log the alert, count it, and call each notifier of its kind: one that fails is
        logged and does not stop the others, nor the watch."""
        level = "warning" if alert.kind == "breach" else "info"
        getattr(self.log, level)("SLO %s of %s: %s", alert.kind, self.job_name, alert.message)
        metrics.count_slo_alert(self.job_name, alert.kind)
        metrics.slo_breached(self.job_name, in_breach=slo.breached)
        notifiers = self.on_breach if alert.kind == "breach" else self.on_clear
        alert_context = cast(
            Context, {**context, ALERT_KEY: alert.to_dict(), JOB_KEY: self.job_name}
        )
        for notifier in notifiers:
            try:
                _fresh(notifier)(alert_context)
            except Exception:  # a broken notifier must not end the watch
                self.log.exception(
                    "notifier %s failed on the %s of %s; the watch goes on",
                    _name(notifier),
                    alert.kind,
                    self.job_name,
                )

    def _defer(self, slo_state: dict[str, Any] | None, watched_s: float) -> None:
        from airflow_provider_kafkaspark.triggers.watch import StreamingWatchTrigger

        trigger = StreamingWatchTrigger(
            checkpoint=self.checkpoint,
            job_name=self.job_name,
            kafka_conn_id=self.kafka_conn_id,
            since_batch=self.since_batch,
            slo_state=slo_state,
            watched_s=watched_s,
            timeout_s=float(self.timeout),
            aws_conn_id=self.aws_conn_id,
            **self.settings.to_dict(),
        )
        remaining = max(0.0, float(self.timeout) - watched_s)
        self.defer(
            trigger=trigger,
            method_name="execute_complete",
            timeout=timedelta(seconds=remaining + _DEFER_SLACK_S),
        )

    def _kafka_facade(self) -> KafkaFacade:
        if self._kafka is None:
            from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
            from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

            self._kafka = KafkaFacade(
                KafkaSparkHook(self.kafka_conn_id).kafka_client_config(),
                timeout_s=self.settings.kafka_timeout_s,
            )
        return self._kafka


def _notifiers(given: Notifier | Sequence[Notifier] | None, where: str) -> tuple[Notifier, ...]:
    if given is None:
        return ()
    items = [given] if isinstance(given, BaseNotifier) or callable(given) else list(given)
    for item in items:
        if not callable(item):
            raise InvalidArgumentError(
                f"{where}: {type(item).__name__} is neither a notifier nor a callable"
            )
    return tuple(items)


def _fresh(notifier: Notifier) -> Notifier:
    """A notifier renders its templates into itself, once: a copy per announcement lets each
    render for its own alert. One that cannot be copied is called as it is."""
    if not isinstance(notifier, BaseNotifier):
        return notifier
    try:
        return copy.deepcopy(notifier)
    except Exception:  # noqa: BLE001 - e.g. a client with a lock inside
        return notifier


def _name(notifier: Notifier) -> str:
    return getattr(notifier, "__name__", None) or type(notifier).__name__
