"""Fixtures shared by the unit tests of the health sensor and the health trigger."""

from __future__ import annotations

import json

import pytest

from tests.unit.airflow_helpers import SECRET


@pytest.fixture
def kafka_unit_conn(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = {"bootstrap.servers": "127.0.0.1:1", "sasl.password": SECRET}
    monkeypatch.setenv(
        "AIRFLOW_CONN_KAFKA_UNIT", json.dumps({"conn_type": "kafka", "extra": extra})
    )
