"""Plain helpers shared by the unit tests of the Airflow layer (operators, sensors, triggers,
the hook)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any, cast

import pytest
from airflow.sdk import Context
from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.core.health.rules import Observation

T0 = 1_700_000_000_000
SECRET = "s3cret-sasl-password"


def lease(
    owner: str = "a" * 32, *, started: int = T0 - 5_000, beat: int = T0, ttl: int = 30_000
) -> Lease:
    return Lease(
        owner_id=owner,
        job_name="job",
        host="host",
        pid=123,
        started_at_ms=started,
        heartbeat_at_ms=beat,
        ttl_ms=ttl,
    )


def obs(
    at: int, committed: int | None, offset: int = 100, lag: int = 0, planned: int | None = None
) -> Observation:
    return Observation(
        at_ms=at,
        latest_planned=committed if planned is None else planned,
        latest_committed=committed,
        committed_offsets={"t": {0: offset}},
        end_offsets={"t": {0: offset + lag}},
    )


def context() -> Context:
    return cast(Context, {})


def kafka_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, extra: object) -> str:
    """A `kafka` connection `conn_id` given as an AIRFLOW_CONN_ variable; `extra` as given
    (a string is kept as is, so malformed JSON can be tested)."""
    text = extra if isinstance(extra, str) else json.dumps(extra)
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "kafka", "extra": text})
    )
    return conn_id


def first_event_closed_elsewhere(trigger: BaseTrigger) -> dict[str, Any]:
    """A trigger's first event, read in one task, then its generator closed in another task
    (another context), as asyncio finalizes a generator the triggerer left unfinished."""

    async def read_then_close() -> dict[str, Any]:
        events = cast("AsyncGenerator[TriggerEvent, None]", trigger.run())

        async def first() -> TriggerEvent:
            return await anext(events)

        event = await asyncio.create_task(first())
        await asyncio.create_task(events.aclose())
        return dict(event.payload)

    return asyncio.run(read_then_close())
