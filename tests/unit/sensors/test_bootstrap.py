"""KafkaBootstrapHealthSensor against bootstrap servers that are all down, without a broker."""

from __future__ import annotations

import json
import socket

import pytest

from airflow_provider_kafkaspark.sensors.bootstrap import KafkaBootstrapHealthSensor
from tests.unit.airflow_helpers import SECRET, context


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_bootstrap_sensor_with_only_dead_servers_is_never_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    servers = f"127.0.0.1:{closed_port()},127.0.0.1:{closed_port()}"
    extra = {"bootstrap.servers": servers, "sasl.password": SECRET}
    monkeypatch.setenv(
        "AIRFLOW_CONN_KAFKA_DEAD", json.dumps({"conn_type": "kafka", "extra": extra})
    )
    for require_all in (True, False):
        sensor = KafkaBootstrapHealthSensor(
            task_id="b", kafka_conn_id="kafka_dead", timeout_s=2, require_all=require_all
        )
        result = sensor.poke(context())
        assert not result.is_done and result.xcom_value is None
    assert KafkaBootstrapHealthSensor.template_fields == ("kafka_conn_id",)
