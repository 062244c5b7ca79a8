"""The operators' metrics: names, what a submit, deploy or stop counts, and that a metrics
call never fails a task."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_kafkaspark import operator_metrics
from airflow_provider_kafkaspark.operator_metrics import (
    count,
    deploy_counts,
    savepoint_gauges,
    stat_job,
    stat_name,
    submit_counts,
)


def test_a_job_name_is_one_level_of_the_stat_name() -> None:
    assert stat_name("ip_count", "savepoints") == "kafkaspark.ip_count.savepoints"
    assert stat_name("ip.count-2", "restarts") == "kafkaspark.ip_count-2.restarts"
    # A long name keeps its start and a digest of the whole: two long names stay apart.
    long_a, long_b = "a" * 90 + "x", "a" * 90 + "y"
    assert len(stat_job(long_a)) == 60 and stat_job(long_a).startswith("a" * 51 + "_")
    assert stat_job(long_a) != stat_job(long_b)


def test_a_submit_counts_a_start_and_a_replaced_driver_as_a_restart() -> None:
    assert submit_counts({"job_ref": {}, "replaced": False}) == {"submits": 1}
    assert submit_counts({"job_ref": {}, "replaced": True}) == {"submits": 1, "restarts": 1}
    # An earlier try of the task started it, and counted it.
    assert submit_counts({"job_ref": {}, "adopted": True}) == {}


@pytest.mark.parametrize(
    ("result", "counts"),
    [
        ({"action": "submit", "handle": {"replaced": False}}, {"submits": 1}),
        ({"action": "upgrade", "handle": {}}, {"submits": 1, "restarts": 1}),
        ({"action": "noop", "handle": None}, {}),
        ({"action": "refuse", "handle": None}, {}),
    ],
)
def test_a_deploy_counts_what_it_did(result: dict[str, Any], counts: dict[str, int]) -> None:
    assert deploy_counts(result) == counts


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str, float]] = []

    def incr(self, name: str, value: int, *, tags: dict[str, str]) -> None:
        assert tags == {"job": name.split(".")[1]}
        self.sent.append(("incr", name, value))

    def gauge(self, name: str, value: float, *, tags: dict[str, str]) -> None:
        assert tags == {"job": name.split(".")[1]}
        self.sent.append(("gauge", name, value))


def test_counters_and_gauges_go_to_airflows_stats(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk.observability import stats

    recorder = Recorder()
    monkeypatch.setattr(stats, "Stats", recorder)
    count("j", {"stops": 1})
    savepoint_gauges("j", savepoints=3, savepoint_bytes=2048)
    savepoint_gauges("k", savepoints=None, savepoint_bytes=10)  # not counted: not sent
    assert recorder.sent == [
        ("incr", "kafkaspark.j.stops", 1),
        ("gauge", "kafkaspark.j.savepoint_bytes", 2048),
        ("gauge", "kafkaspark.j.savepoints", 3),
        ("gauge", "kafkaspark.k.savepoint_bytes", 10),
    ]


def test_a_failing_stats_client_never_fails_the_task(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from airflow.sdk.observability import stats

    class Broken:
        def incr(self, name: str, value: int, *, tags: dict[str, str]) -> None:
            raise OSError("statsd host does not resolve")

    monkeypatch.setattr(stats, "Stats", Broken())
    count("j", {"submits": 1})
    assert "metric kafkaspark.j.submits not sent" in caplog.text


def test_savepoints_are_counted_as_zero_in_an_empty_root_and_not_when_unreadable(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert operator_metrics.count_savepoints(str(tmp_path / "none"), "j") == 0
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    assert operator_metrics.count_savepoints("s3://bucket/sp", "j") is None
