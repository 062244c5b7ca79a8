"""Whether a driver is there: the lease, a pending start, or its backend's word."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef, job_ref_to_dict
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker
from airflow_provider_kafkaspark.lifecycle import observe


def submitted(checkpoint: str, at_ms: int) -> YarnJobRef:
    ref = YarnJobRef("clicks", checkpoint, "application_1_0001", "http://rm:8088")
    ControlFolder(checkpoint).write_submitted(
        SubmittedMarker(at_ms, "clicks", "test", "worker1", job_ref=job_ref_to_dict(ref))
    )
    return ref


def test_a_driver_its_cluster_manager_restarts_is_there_without_a_lease(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # YARN's next attempt of a killed driver: no lease yet, the submit long past.
    checkpoint = str(tmp_path / "ckpt")
    ref = submitted(checkpoint, at_ms=1)
    asked: list[object] = []

    def alive(r: object) -> bool:
        asked.append(r)
        return True

    monkeypatch.setattr(observe, "driver_alive", alive)
    assert observe.driver_present(checkpoint)
    assert asked == [ref]
    monkeypatch.setattr(observe, "driver_alive", lambda r: False)
    assert not observe.driver_present(checkpoint)


def test_nothing_submitted_is_nothing_there(tmp_path: Path) -> None:
    assert not observe.driver_present(str(tmp_path / "ckpt"))
