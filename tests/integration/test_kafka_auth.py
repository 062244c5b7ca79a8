"""A wrong SASL password against a real broker: every sensor and operator that talks to Kafka
fails at once (no retry, well before its Kafka timeout) with "SASL authentication failed for
user X on broker Y", and never shows the password."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from reliability.scenarios.secrets import HOST, SASL_USER, sasl_cluster, sasl_extra
from tests.integration.spark_checkpoints import MadeCheckpoint

PASSWORD = "right-sasl-password-1"
WRONG = "wrong-sasl-password-2"
# Each call's Kafka budget: a refused login must end the call long before it.
KAFKA_TIMEOUT_S = 20.0
AT_ONCE_S = 8.0


@pytest.fixture(scope="module")
def sasl_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cluster, sasl_port = sasl_cluster(tmp_path_factory.mktemp("sasl-kafka"), PASSWORD)
    with cluster:
        yield f"{HOST}:{sasl_port}"


@pytest.fixture()
def connections(sasl_servers: str, monkeypatch: pytest.MonkeyPatch) -> str:
    for conn_id, password in (("kafka_good", PASSWORD), ("kafka_wrong", WRONG)):
        extra = sasl_extra(sasl_servers, password)
        monkeypatch.setenv(
            f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "kafka", "extra": extra})
        )
    return sasl_servers


def fails_at_once(act: Callable[[], object], servers: str) -> str:
    started = time.monotonic()
    with pytest.raises(AirflowFailException) as raised:
        act()
    elapsed = time.monotonic() - started
    message = str(raised.value)
    assert f"SASL authentication failed for user '{SASL_USER}' on broker {servers}" in message
    assert WRONG not in message and PASSWORD not in message
    assert elapsed < AT_ONCE_S, f"took {elapsed:.1f}s (Kafka budget {KAFKA_TIMEOUT_S:g}s)"
    return message


def test_the_right_password_works(connections: str) -> None:
    from airflow_provider_kafkaspark.sensors.bootstrap import KafkaBootstrapHealthSensor

    sensor = KafkaBootstrapHealthSensor(
        task_id="bootstrap", kafka_conn_id="kafka_good", timeout_s=KAFKA_TIMEOUT_S
    )
    assert sensor.poke(cast(Context, {})).is_done


def test_bootstrap_sensor(connections: str) -> None:
    from airflow_provider_kafkaspark.sensors.bootstrap import KafkaBootstrapHealthSensor

    sensor = KafkaBootstrapHealthSensor(
        task_id="bootstrap", kafka_conn_id="kafka_wrong", timeout_s=KAFKA_TIMEOUT_S
    )
    fails_at_once(lambda: sensor.poke(cast(Context, {})), connections)


def test_health_sensor(connections: str, made_checkpoints: dict[str, MadeCheckpoint]) -> None:
    from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor

    sensor = StreamingHealthSensor(
        task_id="healthy",
        checkpoint=str(made_checkpoints["stateless"].path),
        kafka_conn_id="kafka_wrong",
        kafka_timeout_s=KAFKA_TIMEOUT_S,
    )
    try:
        fails_at_once(lambda: sensor.poke(cast(Context, {})), connections)
    finally:
        sensor.close()


def test_health_trigger(connections: str, made_checkpoints: dict[str, MadeCheckpoint]) -> None:
    from airflow_provider_kafkaspark.triggers.health import StreamingHealthTrigger

    trigger = StreamingHealthTrigger(
        checkpoint=str(made_checkpoints["stateless"].path),
        kafka_conn_id="kafka_wrong",
        since_batch=None,
        started_ms=int(time.time() * 1000),
        timeout_s=120,
        kafka_timeout_s=KAFKA_TIMEOUT_S,
    )

    async def first_event() -> dict[str, Any]:
        async for event in trigger.run():
            return cast(dict[str, Any], event.payload)
        raise AssertionError("the trigger ended without an event")

    started = time.monotonic()
    payload = asyncio.run(first_event())
    assert time.monotonic() - started < AT_ONCE_S
    assert payload["state"] == "failed"
    assert f"SASL authentication failed for user '{SASL_USER}'" in payload["reason"]
    assert WRONG not in json.dumps(payload)


def test_reconcile_operator(connections: str, made_checkpoints: dict[str, MadeCheckpoint]) -> None:
    from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator

    made = made_checkpoints["stateless"]
    operator = KafkaPartitionReconcileOperator(
        task_id="reconcile",
        checkpoint=str(made.path),
        kafka_conn_id="kafka_wrong",
        subscribe=[made.topic],
        kafka_timeout_s=KAFKA_TIMEOUT_S,
    )
    fails_at_once(lambda: operator.execute(cast(Context, {})), connections)


def test_submit_operator(connections: str, tmp_path: Path) -> None:
    from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator

    spec = {
        "job_name": "auth_job",
        "source": {"bootstrap_servers": "from-connection:9092", "subscribe": ["auth_source"]},
        "sink": {"kind": "console"},
        "checkpoint_location": str(tmp_path / "checkpoint"),
    }
    operator = SubmitStreamingJobOperator(
        task_id="submit",
        job_spec=spec,
        kafka_conn_id="kafka_wrong",
        workdir=str(tmp_path / "drivers"),
        probe_timeout_s=KAFKA_TIMEOUT_S,
    )
    fails_at_once(lambda: operator.execute(cast(Context, {})), connections)
    assert not (tmp_path / "drivers").exists() or not any((tmp_path / "drivers").iterdir())
