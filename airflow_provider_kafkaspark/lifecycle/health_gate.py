"""The deployment's health gate: the health sensor's watch, polled in this process until it
decides or the bound passes (the sensor and its trigger poll the same watch in Airflow)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.health.inputs import read_watch_inputs
from airflow_provider_kafkaspark.core.health.settings import HealthSettings
from airflow_provider_kafkaspark.core.health.watch import WatchDecision
from airflow_provider_kafkaspark.errors import KafkaUnavailableError

log = logging.getLogger(__name__)


def wait_healthy(
    checkpoint: str,
    kafka_client: dict[str, Any],
    settings: HealthSettings,
    *,
    since_batch: int | None,
    since_ms: int | None,
    timeout_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> WatchDecision:
    """Healthy, failed, or timeout after `timeout_s`: the run started at `since_ms` after
    batch `since_batch`, watched with `settings`. A poll Kafka does not answer is skipped."""
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade

    watch = settings.watch(since_batch, since_ms, started_ms=now_ms())
    deadline = clock() + timeout_s
    last_reason = ""
    with KafkaFacade(kafka_client, timeout_s=settings.kafka_timeout_s) as kafka:
        while clock() < deadline:
            try:
                decision = read_watch_inputs(checkpoint, kafka).decide(watch, now_ms())
            except KafkaUnavailableError as exc:
                log.warning("health poll skipped, Kafka did not answer: %s", exc)
            else:
                if decision.state in ("healthy", "failed"):
                    log.info(
                        "health gate of %s: %s: %s", checkpoint, decision.state, decision.reason
                    )
                    return decision
                if decision.reason != last_reason:
                    log.info("health gate of %s: waiting: %s", checkpoint, decision.reason)
                    last_reason = decision.reason
            sleep(settings.poll_interval_s)
    decision = watch.timed_out(now_ms(), timeout_s)
    log.info("health gate of %s: %s", checkpoint, decision.reason)
    return decision
