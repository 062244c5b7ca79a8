"""The one-host Airflow UI's settings: exactly the users given, with their roles, and not
everyone an admin; bad users refused before anything starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkaspark_devstack.airflow_services import AirflowServiceError, new_shared_secrets
from kafkaspark_devstack.airflow_ui import (
    ADMIN,
    DEFAULT_USERS,
    VIEWER,
    LocalAirflowUI,
    UiUser,
    auth_settings,
    passwords_json,
    ui_environment,
)


def test_the_default_users_are_an_admin_and_a_viewer_with_their_own_logins(
    tmp_path: Path,
) -> None:
    settings = auth_settings(DEFAULT_USERS, tmp_path / "passwords.json")
    assert settings["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] == "admin:ADMIN,viewer:VIEWER"
    assert settings["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS"] == "False"
    assert settings["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] == str(
        tmp_path / "passwords.json"
    )
    assert json.loads(passwords_json(DEFAULT_USERS)) == {
        "admin": ADMIN.password,
        "viewer": VIEWER.password,
    }
    assert ADMIN.password != VIEWER.password


@pytest.mark.parametrize(
    ("users", "fault"),
    [
        ((), "at least one user"),
        ((UiUser("a", "ADMIN", "x"), UiUser("a", "VIEWER", "y")), "repeat"),
        ((UiUser("a", "SUPERUSER", "x"),), "not one of"),
        ((UiUser("a:b", "VIEWER", "x"),), "a name without"),
        ((UiUser("a", "VIEWER", ""),), "and a password"),
    ],
)
def test_users_the_setting_cannot_express_are_refused(
    users: tuple[UiUser, ...], fault: str, tmp_path: Path
) -> None:
    with pytest.raises(AirflowServiceError, match=fault):
        auth_settings(users, tmp_path / "passwords.json")


def test_the_api_server_listens_on_loopback_at_the_port_it_names(tmp_path: Path) -> None:
    keys = new_shared_secrets()
    env = ui_environment(
        database_file=tmp_path / "airflow.db",
        port=18123,
        dags_folder=tmp_path / "dags",
        passwords_file=tmp_path / "p.json",
        users=DEFAULT_USERS,
        keys=keys,
    )
    assert keys.items() <= env.items()
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1"
    assert env["AIRFLOW__API__BASE_URL"] == "http://127.0.0.1:18123"
    assert env["AIRFLOW__API__PORT"] == "18123"
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == f"sqlite:///{tmp_path}/airflow.db"


def test_cli_processes_share_the_api_servers_database_and_keys(tmp_path: Path) -> None:
    ui = LocalAirflowUI(tmp_path, env={"EXTRA": "1"})
    cli = ui.cli_env()
    for name in ("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "AIRFLOW__CORE__FERNET_KEY"):
        assert cli[name] == ui.settings[name]
    assert cli["EXTRA"] == "1"
    assert cli["AIRFLOW_HOME"] == str(tmp_path.resolve() / "cli")
    assert ui.user("viewer").role == "VIEWER"
    with pytest.raises(AirflowServiceError, match="no user 'nobody'"):
        ui.user("nobody")
