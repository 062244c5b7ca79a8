"""The deferrable side of `StreamingHealthSensor`: polls a checkpoint in the triggerer.

The trigger serializes only names and numbers (the connection id, never its config). The Kafka
client config is resolved inside `run`, in a worker thread, through the official Kafka hook:
the triggerer accepts the SDK's blocking connection calls from threads other than its event
loop, and the hook resolves the connection's allow-listed callbacks as it does for tasks.

confluent_kafka and the core Kafka modules are imported inside functions only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

# The poll the trigger runs; the sensor's poke mode and tests reach it through this module.
from airflow_provider_kafkaspark.core.health.inputs import read_watch_inputs as read_watch_inputs
from airflow_provider_kafkaspark.core.health.settings import HealthSettings
from airflow_provider_kafkaspark.core.health.watch import HealthWatch, WatchDecision
from airflow_provider_kafkaspark.core.spec.xcom_values import parse_batch_id

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade

CLASSPATH = "airflow_provider_kafkaspark.triggers.health.StreamingHealthTrigger"


def now_ms() -> int:
    return int(time.time() * 1000)


class StreamingHealthTrigger(BaseTrigger):
    """Polls every `poll_interval_s` and fires one event: healthy, failed or timeout.

    The event is `WatchDecision.to_dict()`: {"state", "reason", "report", "new_batches"}.
    A poll that Kafka does not answer in time is skipped (logged). Bad input (a malformed
    checkpoint or control file, a bad connection, a topic or ACL problem) ends the trigger with
    a failed event naming it (core messages hold no client config values); other errors
    propagate and fail the task, so its retries apply.

    :param checkpoint: the job's checkpoint location (path or fsspec URL).
    :param kafka_conn_id: the official-provider ``kafka`` connection, read in the triggerer.
    :param since_batch: the latest committed batch when the job was submitted (None: none
        was); new batches count from it.
    :param since_ms: when the watched run was submitted (epoch ms); a stopped report older
        than this is another run's. None: judged by ``since_batch``.
    :param started_ms: when the sensor began to watch (epoch ms), which the startup grace
        counts from (None: ``since_ms``, else the trigger's first poll).
    :param timeout_s: how long the trigger watches before its "timeout" event, in seconds.
    :param aws_conn_id: an official-provider ``aws`` connection for a checkpoint on S3.
    :param settings: the fields of ``HealthSettings`` (``min_new_batches``, ``window_s``,
        ``fail_on``, ``lease_required``, ``startup_grace_s``, ``poll_interval_s``,
        ``kafka_timeout_s``, ``policy``), as the sensor's; checked here, in the task, rather
        than in the triggerer.
    """

    def __init__(
        self,
        *,
        checkpoint: str,
        kafka_conn_id: str = "kafka_default",
        since_batch: int | None = None,
        since_ms: int | None = None,
        started_ms: int | None = None,
        timeout_s: float = 3600.0,
        aws_conn_id: str | None = None,
        **settings: Any,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.checkpoint = checkpoint
        self.kafka_conn_id = kafka_conn_id
        self.since_batch = parse_batch_id(since_batch)
        self.since_ms = since_ms
        self.started_ms = started_ms
        self.timeout_s = float(timeout_s)
        self.aws_conn_id = aws_conn_id
        self.settings = HealthSettings.from_dict(settings, "StreamingHealthTrigger")
        self.watch()

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            CLASSPATH,
            {
                "checkpoint": self.checkpoint,
                "kafka_conn_id": self.kafka_conn_id,
                "since_batch": self.since_batch,
                "since_ms": self.since_ms,
                "started_ms": self.started_ms,
                "timeout_s": self.timeout_s,
                "aws_conn_id": self.aws_conn_id,
                **self.settings.to_dict(),
            },
        )

    def watch(self) -> HealthWatch:
        """A new watch of this trigger's run."""
        return self.settings.watch(self.since_batch, self.since_ms, self.started_ms)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
        from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
        from airflow_provider_kafkaspark.errors import InvalidInputError
        from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

        watch = self.watch()
        deadline = time.monotonic() + self.timeout_s
        try:
            config = await asyncio.to_thread(KafkaSparkHook(self.kafka_conn_id).kafka_client_config)
        except InvalidInputError as exc:
            yield _event(_error(f"cannot read the Kafka connection: {exc}"))
            return
        try:
            s3 = await asyncio.to_thread(KafkaSparkHook(aws_conn_id=self.aws_conn_id).s3fs_options)
        except InvalidInputError as exc:
            yield _event(_error(f"cannot read the AWS connection: {exc}"))
            return
        kafka = KafkaFacade(config, timeout_s=self.settings.kafka_timeout_s)
        del config
        # This trigger's own storage scope (the triggerer runs each trigger in its own task);
        # asyncio.to_thread carries it into every poll. The event is yielded outside it: the
        # generator may be closed from another task (another context), where leaving the
        # scope would fail.
        try:
            with s3_options_scope(s3):
                event = await self._outcome(watch, kafka, deadline)
        except InvalidInputError as exc:
            event = _event(_error(f"cannot observe {self.checkpoint}: {exc}"))
        finally:
            kafka.close()
        yield event

    async def _outcome(
        self, watch: HealthWatch, kafka: KafkaFacade, deadline: float
    ) -> TriggerEvent:
        from airflow_provider_kafkaspark.errors import KafkaUnavailableError

        while True:
            try:
                inputs = await asyncio.to_thread(read_watch_inputs, self.checkpoint, kafka)
            except KafkaUnavailableError as exc:
                self.log.warning("health poll skipped, Kafka did not answer: %s", exc)
            else:
                decision = inputs.decide(watch, now_ms())
                self.log.info(
                    "health of %s: %s: %s", self.checkpoint, decision.state, decision.reason
                )
                if decision.done:
                    return _event(decision.to_dict())
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _event(watch.timed_out(now_ms(), self.timeout_s).to_dict())
            await asyncio.sleep(min(self.settings.poll_interval_s, remaining))


def _event(payload: dict[str, Any]) -> TriggerEvent:
    return TriggerEvent(payload)  # type: ignore[no-untyped-call]


def _error(reason: str) -> dict[str, Any]:
    return WatchDecision("failed", reason, None, 0).to_dict()
