"""Pruning keeps what a deployment names as its last stable savepoint, and what is in use."""

from __future__ import annotations

from pathlib import Path

from airflow_provider_kafkaspark.core.state.savepoint import (
    KEPT_LAST_STABLE,
    RetentionPolicy,
    SavepointStore,
)
from tests.unit.core.state.savepoint_fakes import fake_savepoint

HOUR_MS = 3_600_000


def five(tmp_path: Path) -> tuple[SavepointStore, list[str]]:
    store = SavepointStore(str(tmp_path / "sp"))
    ids = [f"job-{i}" for i in range(5)]  # oldest first
    for i, sid in enumerate(ids):
        fake_savepoint(store, sid, created_at_ms=(i + 1) * HOUR_MS)
    return store, ids


def test_a_kept_savepoint_outlives_a_policy_that_would_dispose_it(tmp_path: Path) -> None:
    store, ids = five(tmp_path)
    result = store.prune(RetentionPolicy(max_count=2), keep=frozenset({ids[0]}))
    assert set(result.kept) == {ids[0], ids[3], ids[4]}
    assert set(result.disposed) == {ids[1], ids[2]}
    assert result.reasons[ids[0]] == f"{KEPT_LAST_STABLE} (the policy alone: beyond max_count)"
    assert {m.savepoint_id for m in store.list()} == {ids[0], ids[3], ids[4]}


def test_a_kept_savepoint_within_the_policy_says_so_too(tmp_path: Path) -> None:
    store, ids = five(tmp_path)
    result = store.prune(RetentionPolicy(max_count=5), keep=frozenset({ids[1]}))
    assert result.disposed == ()
    assert result.reasons[ids[1]] == KEPT_LAST_STABLE


def test_age_disposes_old_ones_but_not_the_kept_or_in_use(tmp_path: Path) -> None:
    store, ids = five(tmp_path)
    store.mark_in_use(ids[1])
    result = store.prune(
        RetentionPolicy(max_age_s=2.5 * 3600),
        keep=frozenset({ids[0]}),
        at_ms=6 * HOUR_MS,
    )
    # Ages 5h, 4h, 3h, 2h, 1h: ids 0-2 are too old; 0 kept, 1 in use.
    assert result.disposed == (ids[2],)
    assert result.reasons[ids[1]] == "in use"
    assert result.reasons[ids[0]].startswith(KEPT_LAST_STABLE)
    assert "older than max_age" in result.reasons[ids[0]]


def test_a_keep_naming_no_savepoint_changes_nothing(tmp_path: Path) -> None:
    store, ids = five(tmp_path)
    result = store.prune(RetentionPolicy(max_count=3), keep=frozenset({"other-job-7"}))
    assert set(result.disposed) == {ids[0], ids[1]}
    assert "other-job-7" not in result.reasons


def test_a_dry_run_disposes_nothing(tmp_path: Path) -> None:
    store, _ = five(tmp_path)
    result = store.prune(RetentionPolicy(max_count=1), dry_run=True)
    assert len(result.disposed) == 4
    assert len(store.list()) == 5
