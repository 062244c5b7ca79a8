"""`StreamingHealthSensor`: wait until a streaming job's checkpoint is healthy.

Healthy means: at least `min_new_batches` batches committed after `since_batch` (typically the
submit operator's XCom) and the Burrow-style health rules say OK over `window_s`; or, for a
job whose topic is quiet, idle: a live driver of this run holds the lease and the checkpoint
is at the end of every partition (lag 0), since Spark runs no batch without input. It fails
fast when the driver is gone (stopped report, with the reason of a bad job and the driver
log's path; lease released or expired; the local supervisor's restart budget spent) or the
health status is one of `fail_on`. The decision is `core.health.watch.HealthWatch`; this
class only reads the connection and the context and hands results to XCom.

Poke mode keeps the observations on the sensor instance, so `reschedule` mode (which builds a
new instance per poke) is not offered; `deferrable=True` frees the worker slot instead.

Only Airflow and the pure core are imported here; the Kafka modules load inside methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.configuration import conf
from airflow.sdk import BaseSensorOperator, Context, PokeReturnValue
from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSensorTimeout

from airflow_provider_kafkaspark.core.health.rules import HealthPolicy
from airflow_provider_kafkaspark.core.health.settings import HealthSettings
from airflow_provider_kafkaspark.core.health.watch import (
    DEFAULT_STARTUP_GRACE_MS,
    HealthWatch,
    WatchDecision,
)
from airflow_provider_kafkaspark.core.spec.args import with_poll_interval
from airflow_provider_kafkaspark.core.spec.xcom_values import parse_batch_id
from airflow_provider_kafkaspark.errors import InvalidArgumentError, InvalidInputError

if TYPE_CHECKING:
    from airflow.sdk import XComArg

    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

# The task-level timeout of a deferral, beyond the trigger's own `timeout_s`: the trigger
# normally ends first, with a "timeout" event that says what it last saw.
_DEFER_SLACK_S = 120.0
_DEFAULT_POLL_S = 10.0


class StreamingHealthSensor(BaseSensorOperator):
    """Wait until the checkpoint commits `min_new_batches` new batches and is healthy.

    :param checkpoint: checkpoint location (path or fsspec URL). Templated.
    :param handle: the submit operator's output instead: its ``checkpoint`` and
        ``since_batch`` apply unless given here. Templated.
    :param kafka_conn_id: an official-provider `kafka` connection. Templated.
    :param since_batch: the latest committed batch when the job was submitted (None: none
        was); a rendered template string such as "12" or "None" is accepted. Templated.
    :param since_ms: when the watched run was submitted (epoch ms); a stopped report older
        than this is another run's. None: judged by `since_batch`. Templated.
    :param min_new_batches: batches that must commit after `since_batch`.
    :param window_s: the health window; with the default policy, observations must span half
        of it (and number 3) before any verdict other than UNKNOWN.
    :param fail_on: health statuses that fail the task (default STALLED, STOPPED, REWOUND).
    :param lease_required: fail when no driver holds the checkpoint's lease (after
        `startup_grace_s`, or at once when a lease this sensor saw is released or expires).
    :param startup_grace_s: how long a starting driver may hold no lease, and show STALLED,
        STOPPED or LAGGING, before that fails the task.
    :param poll_interval_s: seconds between polls: another name for `poke_interval`, which
        the trigger follows too (default 10).
    :param deferrable: wait in the triggerer instead of a worker slot (default: Airflow's
        `[operators] default_deferrable`).
    :param kafka_timeout_s: budget of each Kafka request.
    :param policy: thresholds of the health rules.
    :param aws_conn_id: an official-provider ``aws`` connection for a checkpoint on S3
        (without one, the standard AWS variables and files apply).
    """

    template_fields: Sequence[str] = (
        "checkpoint",
        "since_batch",
        "kafka_conn_id",
        "since_ms",
        "handle",
    )
    valid_modes: Sequence[str] = ("poke",)
    ui_color = "#d6eaf8"

    def __init__(
        self,
        *,
        checkpoint: str | None = None,
        handle: dict[str, Any] | str | XComArg | None = None,
        kafka_conn_id: str = "kafka_default",
        since_batch: int | str | None = None,
        since_ms: int | str | None = None,
        min_new_batches: int = 3,
        window_s: float = 60.0,
        fail_on: Sequence[str] | None = None,
        lease_required: bool = True,
        startup_grace_s: float = DEFAULT_STARTUP_GRACE_MS / 1000,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval_s: float | None = None,
        kafka_timeout_s: float = 10.0,
        policy: HealthPolicy | None = None,
        aws_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        with_poll_interval(kwargs, poll_interval_s, _DEFAULT_POLL_S)
        super().__init__(**kwargs)
        if not checkpoint and handle is None:
            raise InvalidArgumentError(
                f"{self.task_id}: give checkpoint, or handle (the submit operator's output)"
            )
        self.checkpoint = checkpoint or ""  # "" until the handle names it, at run time
        self.handle = handle
        self.kafka_conn_id = kafka_conn_id
        self.since_batch = since_batch
        self.since_ms = since_ms
        self.deferrable = deferrable
        self.aws_conn_id = aws_conn_id
        # Not templated: checked here, each naming its parameter. The trigger polls at the
        # sensor's poke_interval too.
        self.settings = HealthSettings.checked(
            self.task_id,
            min_new_batches=min_new_batches,
            window_s=window_s,
            fail_on=fail_on,
            lease_required=lease_required,
            startup_grace_s=startup_grace_s,
            poll_interval_s=float(self.poke_interval),
            kafka_timeout_s=kafka_timeout_s,
            policy=policy,
        )
        self._watch: HealthWatch | None = None
        self._kafka: KafkaFacade | None = None
        self._storage_hook: KafkaSparkHook | None = None  # reads the aws connection once

    # -- inputs ------------------------------------------------------------------------------

    def apply_handle(self) -> None:
        """Take the checkpoint and since_batch from `handle` where not given (after
        rendering); a handle without a checkpoint fails the task naming it."""
        from airflow_provider_kafkaspark.core.spec.xcom_values import submit_handle

        try:
            handle, self.checkpoint = submit_handle(
                self.handle, self.checkpoint, f"{self.task_id}.handle"
            )
        except InvalidInputError as exc:
            raise AirflowFailException(str(exc)) from exc
        if handle is not None and self.since_batch is None:
            self.since_batch = handle.get("since_batch")

    def resolved_since(self) -> tuple[int | None, int | None]:
        """(since_batch, since_ms) after templating: Jinja renders an XCom int as "12" and
        None as "None". Bad values fail the task without retries (the input is wrong)."""
        try:
            return (
                parse_batch_id(self.since_batch, f"{self.task_id}.since_batch"),
                parse_batch_id(self.since_ms, f"{self.task_id}.since_ms", "epoch milliseconds"),
            )
        except InvalidInputError as exc:
            raise AirflowFailException(str(exc)) from exc

    # -- execution ---------------------------------------------------------------------------

    def execute(self, context: Context) -> Any:
        self.apply_handle()
        if self.deferrable:
            from airflow_provider_kafkaspark.core.control.lease import now_ms
            from airflow_provider_kafkaspark.triggers.health import StreamingHealthTrigger

            since_batch, since_ms = self.resolved_since()
            trigger = StreamingHealthTrigger(
                checkpoint=self.checkpoint,
                kafka_conn_id=self.kafka_conn_id,
                since_batch=since_batch,
                since_ms=since_ms,
                started_ms=now_ms(),
                timeout_s=float(self.timeout),
                aws_conn_id=self.aws_conn_id,
                **self.settings.to_dict(),
            )
            self.defer(
                trigger=trigger,
                method_name="execute_complete",
                timeout=timedelta(seconds=float(self.timeout) + _DEFER_SLACK_S),
            )
        self._watch = None  # a new execution watches from scratch
        try:
            return super().execute(context)
        finally:
            self.close()

    def poke(self, context: Context) -> PokeReturnValue:
        from airflow_provider_kafkaspark.airflow_errors import airflow_errors
        from airflow_provider_kafkaspark.core.control.lease import now_ms
        from airflow_provider_kafkaspark.errors import KafkaUnavailableError
        from airflow_provider_kafkaspark.triggers.health import read_watch_inputs

        watch = self._watch_instance()
        with airflow_errors(f"cannot observe {self.checkpoint}", self.kafka_conn_id):
            if self._storage_hook is None:
                from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

                self._storage_hook = KafkaSparkHook(aws_conn_id=self.aws_conn_id)
            try:
                with self._storage_hook.storage():
                    inputs = read_watch_inputs(self.checkpoint, self._kafka_facade())
            except KafkaUnavailableError as exc:
                self.log.warning("health poll skipped, Kafka did not answer: %s", exc)
                return PokeReturnValue(False)
        return self._handle(inputs.decide(watch, now_ms()))

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger: healthy returns the summary, the rest raise."""
        self.apply_handle()
        if event is None:
            raise AirflowException(f"{self.task_id}: the health trigger sent no event")
        try:
            decision = WatchDecision.from_dict(event)
        except InvalidInputError as exc:
            raise AirflowException(f"{self.task_id}: {exc}") from exc
        if decision.state == "timeout":
            self.log.info("health of %s: timeout: %s", self.checkpoint, decision.reason)
            raise AirflowSensorTimeout(decision.reason)
        if decision.state == "waiting":
            raise AirflowException(f"{self.task_id}: the health trigger ended while waiting")
        return self._handle(decision).xcom_value

    def close(self) -> None:
        if self._kafka is not None:
            self._kafka.close()
            self._kafka = None

    # -- internals ---------------------------------------------------------------------------

    def _handle(self, decision: WatchDecision) -> PokeReturnValue:
        self.log.info("health of %s: %s: %s", self.checkpoint, decision.state, decision.reason)
        if decision.state == "healthy":
            return PokeReturnValue(True, decision.summary())
        if decision.state == "waiting":
            return PokeReturnValue(False)
        raise AirflowFailException(decision.reason)

    def _watch_instance(self) -> HealthWatch:
        if self._watch is None:
            self._watch = self.settings.watch(*self.resolved_since())
        return self._watch

    def _kafka_facade(self) -> KafkaFacade:
        if self._kafka is None:
            from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
            from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

            self._kafka = KafkaFacade(
                KafkaSparkHook(self.kafka_conn_id).kafka_client_config(),
                timeout_s=self.settings.kafka_timeout_s,
            )
        return self._kafka
