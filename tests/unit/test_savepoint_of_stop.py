"""Whether a savepoint is the one taken after a given stop (a retried stop returns it), and
whether a stopped report answers a given requester: pure decisions, no storage."""

from __future__ import annotations

import dataclasses

from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointPosition
from airflow_provider_kafkaspark.core.state.savepoint import (
    SavepointManifest,
    StopRecord,
    belongs_to_stop,
    driver_since_stop,
)
from airflow_provider_kafkaspark.lifecycle.stop import answers_request

STOPPED_AT = 1_700_000_000_000
REPORT = StoppedReport(
    stopped_at_ms=STOPPED_AT,
    reason="stop request by airflow:d.stop:manual__1: stop operator",
    clean=True,
    last_planned_batch=7,
    last_committed_batch=7,
    owner_id="driver-a",
)
RECORD = StopRecord.of(REPORT)
POSITION = CheckpointPosition("s3://b/cp", "query-1", 7, 7, None, None, None, None, None)


def manifest(after_stop: StopRecord | None = RECORD) -> SavepointManifest:
    return SavepointManifest(
        savepoint_id="job-20261125T000000000Z-b7",
        job_name="job",
        query_id="query-1",
        last_planned_batch=7,
        last_committed_batch=7,
        pending_batch=None,
        offsets={"t": {"0": 10}},
        planned_offsets={"t": {"0": 10}},
        created_at="2026-11-25T00:00:00.000+00:00",
        created_at_ms=STOPPED_AT + 500,
        spark_version="4.0.0",
        source_checkpoint="s3://b/cp",
        files=(),
        after_stop=after_stop,
    )


def lease(owner: str, started_at_ms: int) -> Lease:
    return Lease(owner, "job", "host", 1, started_at_ms, started_at_ms)


def marker(submitted_at_ms: int) -> SubmittedMarker:
    return SubmittedMarker(submitted_at_ms, "job", "airflow", "host")


def belongs(
    m: SavepointManifest,
    report: StoppedReport = REPORT,
    position: CheckpointPosition = POSITION,
    *,
    current_lease: Lease | None = None,
    current_marker: SubmittedMarker | None = None,
) -> bool:
    return belongs_to_stop(m, report, position, lease=current_lease, marker=current_marker)


def test_the_savepoint_taken_after_this_stop_belongs_to_it() -> None:
    # The stopped driver's own lease may still be there, and its own submit before it.
    assert belongs(
        manifest(),
        current_lease=lease("driver-a", STOPPED_AT - 60_000),
        current_marker=marker(STOPPED_AT - 90_000),
    )


def test_a_savepoint_of_another_stop_does_not() -> None:
    other_driver = dataclasses.replace(REPORT, owner_id="driver-b")
    assert not belongs(manifest(), other_driver)
    later_stop = dataclasses.replace(REPORT, stopped_at_ms=STOPPED_AT + 1)
    assert not belongs(manifest(), later_stop)
    assert not belongs(manifest(after_stop=None))  # taken without a stop, or by an older release


def test_a_job_started_again_since_the_stop_keeps_it_from_belonging() -> None:
    # A driver that took the lease since, still running or crashed (its lease expired).
    assert not belongs(manifest(), current_lease=lease("driver-b", STOPPED_AT + 10_000))
    assert not belongs(manifest(), current_lease=lease("driver-b", STOPPED_AT - 10**9))
    # A submit after the report, whose driver has not taken the lease yet.
    assert not belongs(manifest(), current_marker=marker(STOPPED_AT + 1))


def test_a_checkpoint_that_moved_since_the_savepoint_keeps_it_from_belonging() -> None:
    restored = dataclasses.replace(POSITION, query_id="query-2")
    assert not belongs(manifest(), position=restored)
    assert not belongs(manifest(), position=dataclasses.replace(POSITION, latest_committed=6))
    assert not belongs(manifest(), position=dataclasses.replace(POSITION, latest_planned=8))


def test_a_forced_savepoint_never_belongs_to_a_stop() -> None:
    assert not belongs(dataclasses.replace(manifest(), forced=True))


def test_driver_since_stop_reads_the_lease_owner_and_the_submit_time() -> None:
    assert not driver_since_stop(REPORT, None, None)
    assert not driver_since_stop(REPORT, lease("driver-a", STOPPED_AT - 1), None)
    assert driver_since_stop(REPORT, lease("driver-b", STOPPED_AT + 1), None)
    assert not driver_since_stop(REPORT, None, marker(STOPPED_AT))
    assert driver_since_stop(REPORT, None, marker(STOPPED_AT + 1))


def test_the_manifest_keeps_its_stop_record_and_reads_older_manifests() -> None:
    m = manifest()
    assert SavepointManifest.from_dict(m.to_dict(), "m") == m
    older = m.to_dict()
    del older["after_stop"]
    assert SavepointManifest.from_dict(older, "m").after_stop is None


def test_a_report_answers_only_its_own_requester() -> None:
    assert answers_request(REPORT, "airflow:d.stop:manual__1")
    assert not answers_request(REPORT, "airflow:d.stop:manual__")  # another run's prefix
    assert not answers_request(REPORT, "airflow:d.stop")
    crashed = dataclasses.replace(REPORT, reason="query failed")
    assert not answers_request(crashed, "airflow:d.stop:manual__1")


def test_a_report_that_names_its_request_is_matched_by_that_name_alone() -> None:
    named = dataclasses.replace(
        REPORT, reason="stop request by someone: else", requested_by="airflow:d.stop:manual__1"
    )
    assert answers_request(named, "airflow:d.stop:manual__1")
    assert not answers_request(
        dataclasses.replace(REPORT, requested_by="airflow:d.stop:manual__2"),
        "airflow:d.stop:manual__1",
    )
