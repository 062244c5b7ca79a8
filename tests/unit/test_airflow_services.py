"""What every Airflow host of the bed must share, and bad input to the launcher."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkaspark_devstack.airflow_services import (
    EDGE_EXECUTOR,
    AirflowServiceError,
    LocalAirflowComponent,
    new_shared_secrets,
    shared_environment,
)


def test_each_deployment_gets_its_own_keys_and_every_host_the_same_settings() -> None:
    keys = new_shared_secrets()
    assert set(keys) == {
        "AIRFLOW__CORE__FERNET_KEY",
        "AIRFLOW__API_AUTH__JWT_SECRET",
        "AIRFLOW__API__SECRET_KEY",
    }
    assert keys != new_shared_secrets()
    env = shared_environment(
        database_url="postgresql+psycopg2://postgres@db:5432/airflow",
        api_host="hosta",
        dags_folder="/dags",
        keys=keys,
    )
    assert keys.items() <= env.items()
    assert env["AIRFLOW__CORE__EXECUTOR"] == EDGE_EXECUTOR
    # Tasks on any host reach the api-server by its name, never by loopback.
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://hosta:8080/execution/"
    assert env["AIRFLOW__EDGE__API_URL"] == "http://hosta:8080/edge_worker/v1/rpcapi"


def test_an_unknown_component_is_refused_with_the_choices(tmp_path: Path) -> None:
    with pytest.raises(AirflowServiceError, match=r"webserver.*choose from"):
        LocalAirflowComponent(tmp_path, "webserver")
