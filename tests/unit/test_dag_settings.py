"""The example DAGs' settings from the environment: where drivers go, and bad input."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.examples.dag_settings import example_settings


def test_without_cluster_settings_drivers_stay_local(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("KAFKASPARK_SPARK_CONN_ID", "KAFKASPARK_JARS", "KAFKASPARK_SPARK_CONF"):
        monkeypatch.delenv(key, raising=False)
    settings = example_settings()
    assert settings.submit_arguments() == {"spark_conn_id": None, "jars": None}
    assert "spark_conf" not in settings.job_spec()


def test_cluster_settings_reach_the_submit_and_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKASPARK_SPARK_CONN_ID", "spark_yarn")
    monkeypatch.setenv("KAFKASPARK_JARS", "/jars/a.jar,/jars/b.jar")
    monkeypatch.setenv("KAFKASPARK_SPARK_CONF", '{"spark.sql.shuffle.partitions": 2}')
    settings = example_settings()
    assert settings.submit_arguments() == {
        "spark_conn_id": "spark_yarn",
        "jars": "/jars/a.jar,/jars/b.jar",
    }
    assert settings.job_spec()["spark_conf"] == {"spark.sql.shuffle.partitions": "2"}
    assert settings.upgraded_job_spec()["spark_conf"] == {"spark.sql.shuffle.partitions": "2"}


@pytest.mark.parametrize("text", ["{not json", "[1, 2]"])
def test_a_bad_spark_conf_names_the_variable(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv("KAFKASPARK_SPARK_CONF", text)
    with pytest.raises(InvalidInputError, match="KAFKASPARK_SPARK_CONF"):
        example_settings()


def test_schedules_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKASPARK_RECONCILE_SCHEDULE", raising=False)
    monkeypatch.setenv("KAFKASPARK_RESTART_WINDOW_SCHEDULE", "none")
    settings = example_settings()
    assert settings.restart_window_schedule is None
    assert settings.reconcile_schedule == "*/5 * * * *"
    monkeypatch.setenv("KAFKASPARK_RESTART_WINDOW_SCHEDULE", "0 4 * * SUN")
    assert example_settings().restart_window_schedule == "0 4 * * SUN"


def test_the_warm_handover_is_on_unless_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKASPARK_WARM_HANDOVER", raising=False)
    assert example_settings().warm_handover is True
    monkeypatch.setenv("KAFKASPARK_WARM_HANDOVER", "false")
    assert example_settings().warm_handover is False
    monkeypatch.setenv("KAFKASPARK_WARM_HANDOVER", "sometimes")
    with pytest.raises(InvalidInputError, match="KAFKASPARK_WARM_HANDOVER"):
        example_settings()


def test_periodic_savepoints_hourly_keeping_24_unless_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key in (
        "KAFKASPARK_PERIODIC_SAVEPOINT_SCHEDULE",
        "KAFKASPARK_SAVEPOINT_MAX_COUNT",
        "KAFKASPARK_SAVEPOINT_MAX_AGE_HOURS",
    ):
        monkeypatch.delenv(key, raising=False)
    settings = example_settings()
    assert settings.periodic_savepoint_schedule == "@hourly"
    assert (settings.savepoint_max_count, settings.savepoint_max_age_s) == (24, None)
    monkeypatch.setenv("KAFKASPARK_SAVEPOINT_MAX_COUNT", "none")
    monkeypatch.setenv("KAFKASPARK_SAVEPOINT_MAX_AGE_HOURS", "48")
    settings = example_settings()
    assert (settings.savepoint_max_count, settings.savepoint_max_age_s) == (None, 48 * 3600)
    monkeypatch.setenv("KAFKASPARK_SAVEPOINT_MAX_COUNT", "0")
    with pytest.raises(InvalidInputError, match="KAFKASPARK_SAVEPOINT_MAX_COUNT"):
        example_settings()


def test_the_compatibility_check_is_on_unless_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKASPARK_COMPAT_CHECK", raising=False)
    assert example_settings().compat_check is True
    monkeypatch.setenv("KAFKASPARK_COMPAT_CHECK", "false")
    assert example_settings().compat_check is False


def test_the_watcher_watches_daily_with_two_slos_unless_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key in (
        "KAFKASPARK_WATCH_SCHEDULE",
        "KAFKASPARK_WATCH_MAX_LAG_RECORDS",
        "KAFKASPARK_WATCH_MAX_COMMIT_AGE_S",
    ):
        monkeypatch.delenv(key, raising=False)
    settings = example_settings()
    assert settings.watch_schedule == "@daily"
    assert (settings.watch_max_lag_records, settings.watch_max_commit_age_s) == (10_000, 300.0)
    monkeypatch.setenv("KAFKASPARK_WATCH_SCHEDULE", "none")
    monkeypatch.setenv("KAFKASPARK_WATCH_MAX_COMMIT_AGE_S", "none")
    monkeypatch.setenv("KAFKASPARK_WATCH_MAX_LAG_RECORDS", "500")
    settings = example_settings()
    assert settings.watch_schedule is None
    assert (settings.watch_max_lag_records, settings.watch_max_commit_age_s) == (500, None)
