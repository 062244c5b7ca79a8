"""The stopped report ends its holder's lease; a submitted marker makes a starting driver
visible to a stop; the one mapping of errors to Airflow's; how the driver finds user code."""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from airflow_provider_kafkaspark.airflow_errors import airflow_errors
from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef, job_ref_to_dict
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease, now_ms
from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.core.control.requests import (
    SubmittedMarker,
    ended_before_running,
    reported_after_request,
    start_pending,
    stop_wait_s,
)
from airflow_provider_kafkaspark.core.spec.job_code import (
    check_code_visible,
    driver_python_path,
    resolve_python_path,
)
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec, JobSpecError
from airflow_provider_kafkaspark.errors import (
    InvalidInputError,
    KafkaAccessError,
    KafkaRequestError,
    KafkaUnavailableError,
    LeaseHeldError,
)
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from airflow_provider_kafkaspark.lifecycle.errors import RestoreRefusedError, StopTimeoutError
from airflow_provider_kafkaspark.lifecycle.observe import submitted_ref


def report(owner: str | None, at_ms: int) -> StoppedReport:
    return StoppedReport(at_ms, "stop request", True, 3, 3, owner_id=owner, exit_code=0)


def test_a_stopped_report_of_the_holder_ends_its_lease_for_every_reader(tmp_path: Path) -> None:
    control = ControlFolder(str(tmp_path))
    lease = Lease.new("job")
    control.acquire_lease(lease)
    assert control.live_lease() == lease
    # Another driver's old report says nothing about this lease.
    control.write_stopped(report("someone-else", now_ms()))
    assert control.live_lease() == lease
    # The holder's own report: the lease file still exists (released next), the lease is over.
    control.write_stopped(report(lease.owner_id, now_ms()))
    assert control.read_lease() == lease and control.live_lease() is None


def test_finish_writes_the_report_before_it_removes_the_lease(tmp_path: Path) -> None:
    control = ControlFolder(str(tmp_path))
    lease = Lease.new("job")
    control.acquire_lease(lease)
    seen: list[tuple[bool, bool]] = []
    files = control._lease_files
    original = files.delete

    def delete(path: str, version: str) -> bool:
        seen.append((control.read_stopped() is not None, control.read_lease() is not None))
        return original(path, version)

    files.delete = delete  # type: ignore[method-assign]
    control.finish(lease, report(lease.owner_id, now_ms()))
    assert seen == [(True, True)]  # the report existed while the lease file was removed
    assert control.read_lease() is None and control.read_stopped() is not None


def marker(at: int, timeout_ms: int = 60_000) -> SubmittedMarker:
    return SubmittedMarker(at, "job", "test", "host", 7, "/logs/x.log", timeout_ms)


def lease_at(started: int) -> Lease:
    return Lease("o" * 32, "job", "host", 1, started, started)


def test_start_pending_until_the_lease_a_report_or_the_bound() -> None:
    t = 1_000_000
    assert start_pending(marker(t), None, None, t + 5_000)
    assert not start_pending(None, None, None, t)
    assert not start_pending(marker(t), lease_at(t + 1), None, t + 5_000)  # driver took it
    assert start_pending(marker(t), lease_at(t - 9_000), None, t + 5_000)  # an older lease
    assert not start_pending(marker(t), None, report("o", t + 2), t + 5_000)  # it ended
    assert start_pending(marker(t), None, report("o", t - 2), t + 5_000)  # an older report
    assert not start_pending(marker(t, 10_000), None, None, t + 10_001)  # bound passed
    assert not start_pending(marker(t), None, None, t + 5_000, launcher_gone=True)


def test_a_stop_waits_for_a_driver_its_backend_sees_restarting() -> None:
    t, base = 1_000_000, 90.0
    old = marker(t - 3_600_000)  # submitted an hour ago: no longer "starting" by itself

    def wait(**seen: object) -> float | None:
        facts = {"lease_live": False, "backend_alive": False, "starting": False, **seen}
        return stop_wait_s(base, marker=old, at_ms=t, **facts)  # type: ignore[arg-type]

    assert wait(lease_live=True) == base  # running: its drain and exit
    # No lease, but YARN runs its next attempt: the startup bound on top.
    assert wait(backend_alive=True) == base + old.startup_timeout_ms / 1000
    assert wait() is None  # nothing runs or starts: nothing to stop
    fresh = marker(t - 10_000)
    assert (
        stop_wait_s(
            base, lease_live=False, backend_alive=False, marker=fresh, starting=True, at_ms=t
        )
        == base + (fresh.startup_timeout_ms - 10_000) / 1000
    )


def test_a_driver_gone_without_running_after_the_request_stopped_nothing() -> None:
    asked = 1_000_000
    assert ended_before_running(None, asked)  # no lease file: none taken since either
    # A lease long expired when the stop was asked: the driver listed alive was exiting.
    stale = Lease("o" * 32, "job", "host", 1, asked - 90_000, asked - 60_000, ttl_ms=20_000)
    assert ended_before_running(stale, asked)
    # A holder live at the request, or one that started since, is a crash if it left no report.
    live = Lease("o" * 32, "job", "host", 1, asked - 90_000, asked - 5_000, ttl_ms=20_000)
    assert not ended_before_running(live, asked)
    assert not ended_before_running(lease_at(asked + 1_000), asked)


def test_the_submitted_marker_names_the_driver_for_a_stop_without_a_handle(
    tmp_path: Path,
) -> None:
    checkpoint = str(tmp_path)
    control = ControlFolder(checkpoint)
    assert submitted_ref(checkpoint) is None
    ref = YarnJobRef("job", checkpoint, "application_1_0001", "http://rm:8088")
    control.write_submitted(
        SubmittedMarker(now_ms(), "job", "test", "host", job_ref=job_ref_to_dict(ref))
    )
    assert submitted_ref(checkpoint) == ref
    # A marker of an older release (no reference) or with a broken one names nothing.
    control.write_submitted(SubmittedMarker(now_ms(), "job", "test", "host"))
    assert submitted_ref(checkpoint) is None
    control.write_submitted(
        SubmittedMarker(now_ms(), "job", "test", "host", job_ref={"backend": "mesos"})
    )
    assert submitted_ref(checkpoint) is None


@pytest.mark.parametrize(
    ("error", "permanent"),
    [
        (InvalidInputError("bad"), True),
        (JobSpecError("bad"), True),
        (KafkaAccessError("denied"), True),
        (LeaseHeldError("held"), True),
        (RestoreRefusedError("refused"), True),
        (StopTimeoutError("no kill"), True),
        (KafkaUnavailableError("down"), False),
        (KafkaRequestError("odd"), False),
    ],
)
def test_one_mapping_permanent_fails_unavailable_retries(error: Exception, permanent: bool) -> None:
    with pytest.raises(AirflowException) as caught, airflow_errors("task"):
        raise error
    assert isinstance(caught.value, AirflowFailException) is permanent
    assert caught.value.__cause__ is error and str(caught.value) == f"task: {error}"


def test_other_errors_pass_the_mapping_unchanged() -> None:
    with pytest.raises(KeyError), airflow_errors("task"):
        raise KeyError("x")


def spec(**extra: object) -> JobSpec:
    raw = job_spec_dict(bootstrap_servers="b:9092", checkpoint="/cp", job_name="j")
    raw.update(extra)
    return JobSpec.from_dict(raw)


def test_python_path_is_resolved_against_the_dag_folder(tmp_path: Path) -> None:
    resolved = resolve_python_path(spec(python_path=["code", "/abs/x.zip", "s3://b/c.zip"]), "/d")
    assert resolved.python_path == ("/d/code", "/abs/x.zip", "s3://b/c.zip")
    with pytest.raises(JobSpecError, match=r"python_path\[0\]"):
        resolve_python_path(spec(python_path=["code"]), None)
    with pytest.raises(JobSpecError, match=r"python_path\[0\]"):
        JobSpec.from_dict({**spec().to_dict(), "python_path": [""]})
    assert driver_python_path(resolved, "/old") == "/d/code:/abs/x.zip:/old"


def test_the_transformation_module_must_be_findable(tmp_path: Path) -> None:
    (tmp_path / "mycode").mkdir()
    (tmp_path / "mycode" / "__init__.py").write_text("")
    (tmp_path / "mycode" / "jobs.py").write_text("raise RuntimeError('not imported')\n")
    good = spec(transformation="mycode.jobs:transform", python_path=[str(tmp_path)])
    check_code_visible(good, search_path=[])  # found, and not imported (it would raise)
    missing = spec(transformation="othercode.jobs:transform", python_path=[str(tmp_path)])
    with pytest.raises(JobSpecError, match=r"'transformation': module 'othercode\.jobs'"):
        check_code_visible(missing, search_path=[])
    gone = spec(transformation="mycode.jobs:transform", python_path=[str(tmp_path / "nope")])
    with pytest.raises(JobSpecError, match=r"python_path\[0\].*does not exist"):
        check_code_visible(gone, search_path=[])
    # The package's own example is found on this process's path.
    check_code_visible(spec())


def test_a_report_answers_the_stop_it_names_whatever_the_driver_s_clock() -> None:
    # The driver's clock runs 30 s behind the stopper's: its report's own time is before the
    # request, but it names the request it answers.
    requested_at = 1_800_000_000_000
    report = StoppedReport(requested_at - 30_000, "stop request", True, 4, 4)
    named = StoppedReport(
        requested_at - 30_000, "stop request", True, 4, 4, requested_at_ms=requested_at
    )
    assert reported_after_request(named, requested_at)
    assert not reported_after_request(report, requested_at)  # names none, written "before"
    assert reported_after_request(
        StoppedReport(requested_at + 1, "failed", False, 4, 3), requested_at
    )
    # A report of an earlier stop is not this one's answer, whatever its time says.
    earlier = StoppedReport(
        requested_at + 5_000, "stop request", True, 2, 2, requested_at_ms=requested_at - 1
    )
    assert not reported_after_request(earlier, requested_at)
