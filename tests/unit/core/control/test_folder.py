"""Control folder formats: the lease taken and renewed in it, atomic JSON files, typed errors."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.core.control.reports import (
    BatchProgress,
    ProgressFile,
    StoppedReport,
)
from airflow_provider_kafkaspark.core.control.requests import StopRequest
from airflow_provider_kafkaspark.errors import ControlFileError, LeaseHeldError, LeaseLostError


def lease(owner: str, at_ms: int, ttl_ms: int = 10_000) -> Lease:
    return Lease(owner, "job", "host", 1, at_ms, at_ms, ttl_ms)


def backdate_lease(folder: Path, seconds: float) -> None:
    """The lease file as the disk would have it `seconds` after its last write: on storage
    that tells a file's age, that age (not the heartbeat's own time) decides expiry."""
    then = time.time() - seconds
    os.utime(folder / "_kafkaspark" / "lease.json", (then, then))


def test_fresh_lease_of_another_owner_is_refused(tmp_path: Path) -> None:
    control = ControlFolder(str(tmp_path))
    assert control.acquire_lease(lease("a", 1_000), at_ms=1_000) is None
    with pytest.raises(LeaseHeldError, match="held by driver a"):
        control.acquire_lease(lease("b", 5_000), at_ms=5_000)
    assert control.read_lease() == lease("a", 1_000)


def test_expired_lease_is_taken_over_and_reported(tmp_path: Path) -> None:
    control = ControlFolder(str(tmp_path))
    control.acquire_lease(lease("a", 1_000), at_ms=1_000)
    backdate_lease(tmp_path, 20)
    previous = control.acquire_lease(lease("b", 20_000), at_ms=20_000)
    assert previous is not None and previous.owner_id == "a"
    assert control.read_lease() == lease("b", 20_000)


def test_a_lease_built_long_before_it_is_taken_is_stamped_when_taken(tmp_path: Path) -> None:
    # A standby builds its lease at start and takes it at the handover, minutes later.
    built = lease("standby", 1_000)
    taken = built.taken(at_ms=200_000)
    assert (taken.owner_id, taken.started_at_ms, taken.heartbeat_at_ms) == (
        "standby",
        200_000,
        200_000,
    )
    assert not built.is_fresh(at_ms=200_001) and taken.is_fresh(at_ms=200_001)
    control = ControlFolder(str(tmp_path))
    control.acquire_lease(taken, at_ms=200_000)
    assert control.live_lease(at_ms=205_000) == taken


def test_forced_takeover_and_renewal_rules(tmp_path: Path) -> None:
    control = ControlFolder(str(tmp_path))
    a = lease("a", 1_000)
    control.acquire_lease(a, at_ms=1_000)
    control.acquire_lease(lease("b", 2_000), at_ms=2_000, force=True)
    with pytest.raises(LeaseHeldError, match="taken over"):
        control.renew_lease(a)
    control.release_lease(a)  # not the owner: nothing happens
    assert control.read_lease() is not None
    control.release_lease(lease("b", 2_000))
    assert control.read_lease() is None


def test_renewal_moves_the_heartbeat(tmp_path: Path) -> None:
    control = ControlFolder(str(tmp_path))
    a = Lease.new("job", ttl_ms=5_000, at_ms=1_000)
    control.acquire_lease(a, at_ms=1_000)
    renewed = control.renew_lease(a, application_id="local-123")
    assert renewed.heartbeat_at_ms > a.heartbeat_at_ms
    assert renewed.application_id == "local-123"
    assert control.read_lease() == renewed
    assert a.is_fresh(6_000) and not a.is_fresh(6_001)


def test_files_round_trip_and_leave_no_temp_files(tmp_path: Path) -> None:
    control = ControlFolder(str(tmp_path))
    request = StopRequest(1, "airflow", "restart window", 30.0)
    control.request_stop(request)
    report = StoppedReport(2, "stop request", True, 4, 4, {"t": {"0": 9}}, "a", "drained")
    control.write_stopped(report)
    progress = ProgressFile(
        "q",
        "r",
        3,
        (
            BatchProgress(
                4, "2026", 10, 1.0, 2.0, {"triggerExecution": 5}, {"t": {"0": 9}}, {"t": {"0": 9}}
            ),
        ),
        lag_commits_ok=1,
    )
    control.write_progress(progress)
    assert control.read_stop_request() == request
    assert control.read_stopped() == report
    assert control.read_progress() == progress
    assert progress.last_batch is not None and progress.last_batch.batch_id == 4
    names = sorted(p.name for p in (tmp_path / "_kafkaspark").iterdir())
    assert names == ["progress.json", "stop-request.json", "stopped.json"]
    control.clear_stop_request()
    control.clear_stopped()
    assert control.read_stop_request() is None and control.read_stopped() is None


@pytest.mark.parametrize(
    ("content", "message"),
    [("[]", "expected a JSON object"), ('{"owner_id": "x"}', "missing"), ("{", "not JSON")],
)
def test_bad_lease_files_are_typed_errors(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "_kafkaspark").mkdir()
    (tmp_path / "_kafkaspark" / "lease.json").write_text(content)
    with pytest.raises(ControlFileError, match=message) as err:
        ControlFolder(str(tmp_path)).read_lease()
    assert "lease.json" in str(err.value)


def test_a_renewal_after_a_takeover_and_release_is_refused(tmp_path: Path) -> None:
    # A driver paused past its ttl: another took the lease over, then stopped and released it.
    paused, other = ControlFolder(str(tmp_path)), ControlFolder(str(tmp_path))
    a = lease("a", 1_000)
    paused.acquire_lease(a, at_ms=1_000)
    backdate_lease(tmp_path, 40)
    other.acquire_lease(lease("b", 40_000), at_ms=40_000)
    other.release_lease(lease("b", 40_000))
    assert other.read_lease() is None
    with pytest.raises(LeaseLostError, match="gone since"):
        paused.renew_lease(a)
    assert paused.read_lease() is None  # not written back


def test_a_renewal_is_fenced_by_the_version_this_holder_wrote(tmp_path: Path) -> None:
    control, other = ControlFolder(str(tmp_path)), ControlFolder(str(tmp_path))
    a = lease("a", 1_000)
    control.acquire_lease(a, at_ms=1_000)
    renewed = control.renew_lease(a)
    # Rewritten by someone else with the same owner id's content but another heartbeat:
    # that is not a write of ours through this folder, yet only this owner writes its id.
    other.location.write_atomic(
        json.dumps(asdict(replace(renewed, heartbeat_at_ms=9))), "lease.json"
    )
    assert control.renew_lease(renewed).owner_id == "a"
    # A lease never taken through this folder cannot be renewed through it.
    with pytest.raises(LeaseLostError, match="not held"):
        other.renew_lease(lease("c", 1_000))


def test_release_leaves_a_lease_taken_over_since(tmp_path: Path) -> None:
    control, other = ControlFolder(str(tmp_path)), ControlFolder(str(tmp_path))
    a = lease("a", 1_000)
    control.acquire_lease(a, at_ms=1_000)
    backdate_lease(tmp_path, 40)
    other.acquire_lease(lease("b", 40_000), at_ms=40_000)
    control.release_lease(a)
    held = control.read_lease()
    assert held is not None and held.owner_id == "b"


def test_acquire_over_a_lease_changed_since_it_was_observed_is_refused(tmp_path: Path) -> None:
    control = ControlFolder(str(tmp_path))
    observed = lease("a", 1_000)
    control.acquire_lease(observed, at_ms=1_000)
    control.renew_lease(observed)  # the holder renews after the observation
    with pytest.raises(LeaseHeldError, match="held by driver a"):
        ControlFolder(str(tmp_path)).acquire_lease(lease("b", 2_000), at_ms=2_000, over=observed)


def test_a_lease_s_age_is_the_storage_s_not_the_heartbeat_s(tmp_path: Path) -> None:
    # The holder's clock runs 60 s behind the reader's: its heartbeat time looks a minute old,
    # but the file was written a moment ago, and that decides.
    control = ControlFolder(str(tmp_path))
    behind = lease("a", int(time.time() * 1000) - 60_000)
    control.acquire_lease(behind, force=True)
    read = control.read_lease()
    assert read is not None and read == behind
    assert read.observed_age_ms is not None and read.observed_age_ms < 5_000
    assert read.is_fresh() and control.live_lease() == behind
    with pytest.raises(LeaseHeldError, match="held by driver a"):
        ControlFolder(str(tmp_path)).acquire_lease(lease("b", int(time.time() * 1000)))
    # What the storage observed is never written into the file.
    raw = json.loads((tmp_path / "_kafkaspark" / "lease.json").read_text())
    assert "observed_age_ms" not in raw
