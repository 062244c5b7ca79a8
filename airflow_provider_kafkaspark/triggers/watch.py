"""The deferrable side of `StreamingWatchSensor`: polls a running job in the triggerer and
fires at the first alert (an SLO breach or its all-clear), at the driver's end, or when the
watch's time is up. The sensor resumes, announces the alert and defers again with the state
this trigger carried on (`core/health/slo_watch.py`).

Each poll also emits the job's gauges (`metrics.job_gauges`: lag per topic and in all,
seconds since the latest commit, the last batch's duration; `kafkaspark.<job>.slo_breached`)
through Airflow's stats client, which the triggerer initializes like a task does: a watcher
gives a dashboard one sample per poll for as long as it watches, not only at alerts.

The trigger serializes only names, numbers and the carried state (the connection ids, never
their config); connections are read in a worker thread, as `StreamingHealthTrigger` does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_kafkaspark import metrics
from airflow_provider_kafkaspark.core.health.slo import SloAlert, SloState
from airflow_provider_kafkaspark.core.health.slo_inputs import WatcherInputs

# The poll the trigger runs; tests reach it through this module.
from airflow_provider_kafkaspark.core.health.slo_inputs import (
    read_watcher_inputs as read_watcher_inputs,
)
from airflow_provider_kafkaspark.core.health.slo_watch import (
    EventState,
    SloWatch,
    WatcherEvent,
    WatcherSettings,
    WatchStep,
)
from airflow_provider_kafkaspark.core.spec.xcom_values import parse_batch_id

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade

CLASSPATH = "airflow_provider_kafkaspark.triggers.watch.StreamingWatchTrigger"
# A watch that sees no change logs one line at INFO this often (each poll at DEBUG).
_LOG_EVERY_S = 600.0


def now_ms() -> int:
    return int(time.time() * 1000)


class StreamingWatchTrigger(BaseTrigger):
    """Polls every `poll_interval_s`; fires one `WatcherEvent`: alert, stopped, failed (the
    driver is gone), invalid or timeout.

    `timeout_s` is the whole watch's time, of which `watched_s` has passed in earlier
    deferrals. A Kafka that does not answer leaves the lag unknown for that poll (logged).
    Bad input (a malformed checkpoint or control file, a bad connection, a topic or ACL
    problem) ends the trigger with an invalid event naming it; other errors propagate and
    fail the task, so its retries apply.

    :param checkpoint: the job's checkpoint location (path or fsspec URL).
    :param job_name: the job's name, in the metrics and the log.
    :param kafka_conn_id: the official-provider ``kafka`` connection, read in the triggerer.
    :param since_batch: the latest committed batch when the job was submitted (None: none
        was).
    :param slo_state: ``SloState.to_dict()`` of the watch so far (None: a new watch).
    :param watched_s: how much of ``timeout_s`` earlier deferrals of the same watch used.
    :param timeout_s: the whole watch's time, in seconds.
    :param aws_conn_id: an official-provider ``aws`` connection for a checkpoint on S3.
    :param settings: the flat fields of ``WatcherSettings`` (its SLOs, ``poll_interval_s``,
        ``startup_grace_s``, ``restart_grace_s``, ``kafka_timeout_s``), as the sensor's;
        checked here, in the task, rather than in the triggerer.
    """

    def __init__(
        self,
        *,
        checkpoint: str,
        job_name: str,
        kafka_conn_id: str = "kafka_default",
        since_batch: int | None = None,
        slo_state: dict[str, Any] | None = None,
        watched_s: float = 0.0,
        timeout_s: float = 86400.0,
        aws_conn_id: str | None = None,
        **settings: Any,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.checkpoint = checkpoint
        self.job_name = job_name
        self.kafka_conn_id = kafka_conn_id
        self.since_batch = parse_batch_id(since_batch)
        self.slo_state = None if slo_state is None else dict(slo_state)
        self.watched_s = float(watched_s)
        self.timeout_s = float(timeout_s)
        self.aws_conn_id = aws_conn_id
        self.settings = WatcherSettings.from_dict(settings, "StreamingWatchTrigger")
        self.state(0)  # a malformed carried state fails where the trigger is built

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            CLASSPATH,
            {
                "checkpoint": self.checkpoint,
                "job_name": self.job_name,
                "kafka_conn_id": self.kafka_conn_id,
                "since_batch": self.since_batch,
                "slo_state": self.slo_state,
                "watched_s": self.watched_s,
                "timeout_s": self.timeout_s,
                "aws_conn_id": self.aws_conn_id,
                **self.settings.to_dict(),
            },
        )

    def state(self, at_ms: int) -> SloState:
        """The carried state, carried on at `at_ms` of this host's clock."""
        return SloState() if self.slo_state is None else SloState.from_dict(self.slo_state, at_ms)

    def watch(self, at_ms: int) -> SloWatch:
        return SloWatch(self.settings, self.since_batch, self.state(at_ms))

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
        from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
        from airflow_provider_kafkaspark.errors import InvalidInputError
        from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

        started = time.monotonic()
        watch = self.watch(now_ms())
        try:
            config = await asyncio.to_thread(KafkaSparkHook(self.kafka_conn_id).kafka_client_config)
        except InvalidInputError as exc:
            yield self._event("invalid", f"cannot read the Kafka connection: {exc}", watch, started)
            return
        try:
            s3 = await asyncio.to_thread(KafkaSparkHook(aws_conn_id=self.aws_conn_id).s3fs_options)
        except InvalidInputError as exc:
            yield self._event("invalid", f"cannot read the AWS connection: {exc}", watch, started)
            return
        kafka = KafkaFacade(config, timeout_s=self.settings.kafka_timeout_s)
        del config
        # As in StreamingHealthTrigger: the storage scope is this trigger's own, and the event
        # is yielded outside it (the generator may be closed from another task).
        try:
            with s3_options_scope(s3):
                event = await self._outcome(watch, kafka, started)
        except InvalidInputError as exc:
            event = self._event(
                "invalid", f"cannot observe {self.checkpoint}: {exc}", watch, started
            )
        finally:
            kafka.close()
        yield event

    async def _outcome(self, watch: SloWatch, kafka: KafkaFacade, started: float) -> TriggerEvent:
        status = StatusLog(self.log, self.job_name)
        while True:
            inputs = await asyncio.to_thread(read_watcher_inputs, self.checkpoint, kafka)
            step = watch.poll(inputs, now_ms())
            if step.state in ("stopped", "failed"):
                self.log.info("watch of %s: %s", self.job_name, step.reason)
                return self._event(step.state, step.reason, watch, started)
            emit_metrics(self.job_name, watch, inputs)
            if step.state == "alert":
                self.log.info("watch of %s: %s", self.job_name, step.reason)
                return self._event("alert", step.reason, watch, started, step.alert)
            status.watching(step, inputs.lag_commits_failing)
            remaining = self.timeout_s - self.watched_s - (time.monotonic() - started)
            if remaining <= 0:
                reason = (
                    f"the watch's {self.timeout_s:g} s are up and the job still runs; {step.reason}"
                )
                return self._event("timeout", reason, watch, started)
            await asyncio.sleep(min(self.settings.poll_interval_s, remaining))

    def _event(
        self,
        state: EventState,
        reason: str,
        watch: SloWatch,
        started: float,
        alert: SloAlert | None = None,
    ) -> TriggerEvent:
        event = WatcherEvent(
            state=state,
            reason=reason,
            alert=alert,
            slo_state=watch.state.to_dict(),
            watched_s=self.watched_s + time.monotonic() - started,
        )
        return TriggerEvent(event.to_dict())  # type: ignore[no-untyped-call]


class Log(Protocol):
    """What StatusLog needs of a logger (a trigger's and a task's are of different types)."""

    def info(self, msg: Any, /, *args: Any) -> Any: ...

    def debug(self, msg: Any, /, *args: Any) -> Any: ...


class StatusLog:
    """A watch's log lines while nothing happens: INFO when its phase changes (met, pending,
    in breach, clearing, lag unknown) and every `_LOG_EVERY_S`, DEBUG otherwise, so a watch of
    a day leaves a readable log."""

    def __init__(self, log: Log, job_name: str) -> None:
        self.log = log
        self.job_name = job_name
        self.phase: tuple[str, bool] | None = None
        self.at = 0.0

    def watching(self, step: WatchStep, lag_commits_failing: str | None = None) -> None:
        """`lag_commits_failing`: the driver's lag commits failing, said with each line (the
        lag Kafka's tools show is then not the job's)."""
        reason = f"{step.reason}; {lag_commits_failing}" if lag_commits_failing else step.reason
        phase = (step.phase, lag_commits_failing is not None)
        if phase != self.phase or time.monotonic() - self.at >= _LOG_EVERY_S:
            self.log.info("watch of %s: %s", self.job_name, reason)
            self.phase, self.at = phase, time.monotonic()
        else:
            self.log.debug("watch of %s: %s", self.job_name, reason)


def emit_metrics(job_name: str, watch: SloWatch, inputs: WatcherInputs) -> None:
    """The job's gauges after one poll (never raises)."""
    state = watch.state
    metrics.job_gauges(
        job_name,
        lag_by_topic=inputs.lag_by_topic,
        seconds_since_commit=state.seconds_since_commit(now_ms()),
        batch_duration_ms=inputs.batch_duration_ms,
        lag_commit_failures=inputs.lag_commit_failures,
    )
    metrics.slo_breached(job_name, in_breach=state.breached)
