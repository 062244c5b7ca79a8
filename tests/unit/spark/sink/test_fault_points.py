"""Where crash tests kill the job (`spark/sink/fault_points.py`): armed only by the
environment, once with a marker file."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_kafkaspark.spark.sink import fault_points
from airflow_provider_kafkaspark.spark.sink.fault_points import (
    AFTER_SINK_COMMIT,
    CRASH_AT_ENV,
    CRASH_MARKER_ENV,
    DURING_SINK_WRITE,
    should_crash,
)


def test_should_crash_only_at_the_named_point_and_batch() -> None:
    env = {CRASH_AT_ENV: "after_sink_commit:3"}
    assert should_crash(env, AFTER_SINK_COMMIT, 3)
    assert not should_crash(env, AFTER_SINK_COMMIT, 2)
    assert not should_crash(env, AFTER_SINK_COMMIT, 33)
    assert not should_crash(env, DURING_SINK_WRITE, 3)
    assert not should_crash({}, AFTER_SINK_COMMIT, 3)
    assert not should_crash({CRASH_AT_ENV: ""}, AFTER_SINK_COMMIT, 3)
    assert should_crash({CRASH_AT_ENV: " during_sink_write:0 "}, DURING_SINK_WRITE, 0)


def test_crash_marker_makes_the_crash_happen_once(tmp_path: Path) -> None:
    marker = tmp_path / "crashed"
    env = {CRASH_AT_ENV: "during_sink_write:1", CRASH_MARKER_ENV: str(marker)}
    assert should_crash(env, DURING_SINK_WRITE, 1)
    marker.write_text("done")
    assert not should_crash(env, DURING_SINK_WRITE, 1)


def test_maybe_crash_hands_over_only_when_armed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    crashes: list[tuple[str, int, str, int | None]] = []
    monkeypatch.setattr(
        fault_points,
        "crash_now",
        lambda point, batch, *, marker, driver_pid: crashes.append(
            (point, batch, marker, driver_pid)
        ),
    )
    monkeypatch.delenv(CRASH_AT_ENV, raising=False)
    fault_points.maybe_crash(AFTER_SINK_COMMIT, 0)
    monkeypatch.setenv(CRASH_AT_ENV, "after_sink_commit:7")
    monkeypatch.setenv(CRASH_MARKER_ENV, str(tmp_path / "crashed"))
    fault_points.maybe_crash(AFTER_SINK_COMMIT, 6)
    assert crashes == []
    fault_points.maybe_crash(AFTER_SINK_COMMIT, 7, driver_pid=42)
    assert crashes == [(AFTER_SINK_COMMIT, 7, str(tmp_path / "crashed"), 42)]
