"""A look's storage settings: one attempt, short timeouts, the connection's own kept."""

from __future__ import annotations

from typing import Any

from airflow_provider_kafkaspark.plugins.jobs_view.look import STORAGE_TIMEOUT_S, fail_fast


def test_fail_fast_keeps_the_connections_settings_and_bounds_each_request() -> None:
    given: dict[str, Any] = {
        "key": "k",
        "config_kwargs": {"signature_version": "s3v4", "read_timeout": 60},
    }
    merged = fail_fast(given)
    assert merged["key"] == "k"
    assert merged["config_kwargs"] == {
        "signature_version": "s3v4",
        "connect_timeout": STORAGE_TIMEOUT_S,
        "read_timeout": STORAGE_TIMEOUT_S,
        "retries": {"max_attempts": 1, "mode": "standard"},
    }
    assert given["config_kwargs"]["read_timeout"] == 60  # the connection's own untouched
    assert fail_fast(None)["config_kwargs"]["connect_timeout"] == STORAGE_TIMEOUT_S
