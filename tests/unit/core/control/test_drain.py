from __future__ import annotations

from airflow_provider_kafkaspark.core.control.drain import FinishedTrigger, may_stop_now

BATCH_4 = FinishedTrigger(4, "2026-11-24T07:00:00.000Z")
BATCH_5 = FinishedTrigger(5, "2026-11-24T07:00:03.000Z")


def test_an_idle_query_stops_at_once() -> None:
    assert may_stop_now(
        at_batch_boundary=True,
        trigger_active=False,
        finished_at_request=BATCH_4,
        finished_now=BATCH_4,
    )


def test_a_batch_in_flight_at_the_request_is_waited_for() -> None:
    assert not may_stop_now(
        at_batch_boundary=True,
        trigger_active=True,
        finished_at_request=BATCH_4,
        finished_now=BATCH_4,
    )


def test_a_busy_query_stops_once_the_batch_in_flight_has_finished() -> None:
    # The next trigger is already active (the job is behind): the stop does not wait for it.
    assert may_stop_now(
        at_batch_boundary=True,
        trigger_active=True,
        finished_at_request=BATCH_4,
        finished_now=BATCH_5,
    )


def test_a_quiet_moment_stop_waits_while_any_trigger_runs() -> None:
    assert not may_stop_now(
        trigger_active=True,
        at_batch_boundary=False,
        finished_at_request=BATCH_4,
        finished_now=BATCH_5,
    )
    assert may_stop_now(
        trigger_active=False,
        at_batch_boundary=False,
        finished_at_request=BATCH_4,
        finished_now=BATCH_5,
    )


def test_the_first_batch_in_flight_is_waited_for_until_it_reports() -> None:
    assert not may_stop_now(
        at_batch_boundary=True, trigger_active=True, finished_at_request=None, finished_now=None
    )
    assert may_stop_now(
        at_batch_boundary=True, trigger_active=True, finished_at_request=None, finished_now=BATCH_4
    )


def test_a_no_data_trigger_with_the_same_batch_id_counts_as_finished() -> None:
    later = FinishedTrigger(4, "2026-11-24T07:00:10.000Z")
    assert may_stop_now(
        at_batch_boundary=True, trigger_active=True, finished_at_request=BATCH_4, finished_now=later
    )


def test_progress_of_spark_is_read_from_its_dict() -> None:
    progress = {"batchId": 7, "timestamp": "2026-11-24T07:00:00.000Z", "numInputRows": 3}
    assert FinishedTrigger.of(progress) == FinishedTrigger(7, "2026-11-24T07:00:00.000Z")
    assert FinishedTrigger.of(None) is None
    assert FinishedTrigger.of({}) is None
    assert FinishedTrigger.of({"batchId": "x"}) is None


def test_a_batch_cut_at_the_boundary_is_clean_only_when_the_cut_was_allowed() -> None:
    from airflow_provider_kafkaspark.core.control.drain import stopped_cleanly

    assert stopped_cleanly(pending_batch=None, cut_allowed=False)
    assert stopped_cleanly(pending_batch=8, cut_allowed=True)
    # A quiet-moment stop, Spark's at-least-once sink, or a stop interrupted by its bound.
    assert not stopped_cleanly(pending_batch=8, cut_allowed=False)
