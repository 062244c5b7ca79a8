"""A restore running from a savepoint marks it in use, so retention leaves it alone; a
person's mark outlives the restore."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.core.kafka.reconcile import KafkaView
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.state.restore import RestoreMode, RestoreResult
from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore
from airflow_provider_kafkaspark.errors import SavepointError
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from airflow_provider_kafkaspark.lifecycle import restore as lifecycle_restore
from tests.unit.core.state.savepoint_fakes import fake_savepoint


class NoKafka:
    def __init__(self, config: dict[str, Any]) -> None:
        pass

    def __enter__(self) -> NoKafka:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SavepointStore:
    import airflow_provider_kafkaspark.core.health.observe as observe
    import airflow_provider_kafkaspark.core.kafka.admin as admin

    monkeypatch.setattr(admin, "KafkaFacade", NoKafka)
    monkeypatch.setattr(
        observe, "kafka_view", lambda *a, **k: KafkaView(partitions={}, observed_at_ms=0)
    )
    store = SavepointStore(str(tmp_path / "sp"))
    fake_savepoint(store, "job-1", created_at_ms=1)
    return store


def spec(tmp_path: Path) -> JobSpec:
    return JobSpec.from_dict(
        job_spec_dict(
            bootstrap_servers="k:9092",
            checkpoint=str(tmp_path / "checkpoint"),
            job_name="job",
            source_topic="src",
            sink_topic="out",
        )
    )


def run(
    store: SavepointStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: bool
) -> list[bool]:
    seen: list[bool] = []

    def fake_restore(
        store_: SavepointStore, ref: str | None, target: Any, mode: Any, **_: Any
    ) -> RestoreResult:
        assert ref is not None
        seen.append(store_.is_in_use(ref))
        if fail:
            raise SavepointError("copy failed")
        return RestoreResult(RestoreMode.CHECKPOINT, ref, str(target.url), "earliest")

    monkeypatch.setattr(lifecycle_restore, "restore", fake_restore)
    lifecycle_restore.restore_for_submit(
        spec(tmp_path),
        savepoint_root=store.location.url,
        savepoint_ref="job-1",
        mode="checkpoint",
        kafka_config={},
        force=True,
    )
    return seen


def test_the_savepoint_is_in_use_while_it_restores_and_not_after(
    store: SavepointStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(store, tmp_path, monkeypatch, fail=False) == [True]
    assert not store.is_in_use("job-1")


def test_a_failed_restore_unmarks_it_too(
    store: SavepointStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SavepointError, match="copy failed"):
        run(store, tmp_path, monkeypatch, fail=True)
    assert not store.is_in_use("job-1")


def test_a_persons_mark_stays_after_the_restore(
    store: SavepointStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.mark_in_use("job-1")
    assert run(store, tmp_path, monkeypatch, fail=False) == [True]
    assert store.is_in_use("job-1")
