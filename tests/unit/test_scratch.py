"""Which scratch folders the next local driver reaps: this host's, whose process is gone."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.spark import scratch
from airflow_provider_kafkaspark.spark.scratch import folder_name, owner, reap, stale


def test_names_round_trip_with_odd_job_names_and_dotted_hosts() -> None:
    name = folder_name("clicks/by user", "node-1.example.com", 4242)
    assert "/" not in name and owner(name) == ("node-1.example.com", 4242)
    assert owner("spark-6438b58e") is None


def test_only_this_hosts_gone_drivers_are_stale() -> None:
    names = ["a@h.1", "b@h.2", "c@other.1", "not-a-driver", "d@h.x"]
    assert stale(names, "h", alive=lambda pid: pid == 2) == ["a@h.1"]


def test_reap_removes_gone_drivers_folders_and_keeps_live_ones(tmp_path: Path) -> None:
    host = socket.gethostname()
    gone, live = tmp_path / f"j@{host}.11", tmp_path / f"j@{host}.12"
    for folder in (gone, live):
        (folder / "spark-x").mkdir(parents=True)
        (folder / "spark-x" / "big.jar").write_bytes(b"x")
    assert reap(tmp_path, alive=lambda pid: pid == 12) == [gone]
    assert not gone.exists() and live.exists()
    assert reap(tmp_path / "missing") == []


def test_a_driver_gets_an_empty_private_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("atexit.register", lambda *args: None)
    stale_same_pid = tmp_path / folder_name("job", socket.gethostname(), os.getpid())
    stale_same_pid.mkdir()
    (stale_same_pid / "left").write_text("by a dead driver of a reused pid")
    folder = scratch.driver_scratch("job", tmp_path)
    assert folder == stale_same_pid and list(folder.iterdir()) == []
    assert folder.stat().st_mode & 0o777 == 0o700
