"""When a checkpoint-mode restore gives the restored copy a new query id (pure rule)."""

from __future__ import annotations

from airflow_provider_kafkaspark.core.state.restore import ReplacedRun, ran_past_savepoint
from airflow_provider_kafkaspark.core.state.savepoint import SavepointManifest

QUERY = "b37a4559-b7e5-48ab-b64e-f99ff2149f44"


def savepoint(committed: int | None, pending: int | None = None) -> SavepointManifest:
    return SavepointManifest(
        savepoint_id=f"job-b{committed}",
        job_name="job",
        query_id=QUERY,
        last_planned_batch=pending if pending is not None else committed,
        last_committed_batch=committed,
        pending_batch=pending,
        offsets={},
        planned_offsets={},
        created_at="2026-11-24T11:14:21Z",
        created_at_ms=0,
        spark_version="4.0.0",
        source_checkpoint="/ckpt",
        files=(),
    )


def test_a_rollback_over_a_run_past_the_savepoint_renews_the_query_id() -> None:
    # The restart window's rollback: savepoint at 16, the restored run committed 17 and 18.
    assert ran_past_savepoint(savepoint(16), ReplacedRun(QUERY, 18))


def test_a_run_that_only_planned_a_batch_past_the_savepoint_renews_it_too() -> None:
    # It crashed in batch 17: some of 17's tasks may have committed their markers.
    assert ran_past_savepoint(savepoint(16), ReplacedRun(QUERY, 17))
    # A boundary stop's savepoint planned 17 itself; a run that committed it and planned 18.
    assert ran_past_savepoint(savepoint(16, pending=17), ReplacedRun(QUERY, 18))


def test_a_restore_over_the_savepoints_own_state_keeps_the_query_id() -> None:
    assert not ran_past_savepoint(savepoint(16), ReplacedRun(QUERY, 16))
    # A stop at the batch boundary left batch 17 planned: its re-run needs the same query,
    # so that the sink skips the slots the cut attempt already wrote.
    assert not ran_past_savepoint(savepoint(16, pending=17), ReplacedRun(QUERY, 17))


def test_nothing_to_renew_over_an_empty_target_another_query_or_no_commit() -> None:
    assert not ran_past_savepoint(savepoint(16), None)
    assert not ran_past_savepoint(savepoint(16), ReplacedRun("another-query", 40))
    assert not ran_past_savepoint(savepoint(16), ReplacedRun(QUERY, None))


def test_a_savepoint_before_any_commit_is_passed_by_any_committed_batch() -> None:
    assert ran_past_savepoint(savepoint(None), ReplacedRun(QUERY, 0))
