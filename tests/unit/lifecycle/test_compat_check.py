"""The compatibility check's decisions, and its steps around a backend that plays the
check's driver (the real one: tests/integration/test_compat_check.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.backends.base import JobStatus, SubmitOptions, Submitted
from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef, LocalJobRef
from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec, KafkaSourceSpec, SinkSpec
from airflow_provider_kafkaspark.lifecycle import compat_check
from airflow_provider_kafkaspark.lifecycle.compat_check import (
    CompatResult,
    check_compatibility,
    check_spec,
    compat_job_name,
    default_scratch,
    judge,
    require_compatible,
)
from airflow_provider_kafkaspark.lifecycle.errors import CompatCheckError, IncompatibleUpgradeError
from tests.unit.core.state.test_running_copy import running_checkpoint


def report(code: int, message: str = "", committed: int | None = 2) -> StoppedReport:
    return StoppedReport(
        stopped_at_ms=1,
        reason="bad job" if code else "query finished",
        clean=True,
        last_planned_batch=committed,
        last_committed_batch=committed,
        message=message,
        exit_code=code,
    )


def test_the_verdict_comes_from_the_report_the_batch_and_the_operators() -> None:
    ok = judge(report(0), 2, 2, [0], [0])
    assert ok.compatible is True
    failed = judge(report(4, "StreamingQueryException: [STATE_STORE_KEY_SCHEMA...]"), 2, 1, [0], [])
    assert failed.compatible is False and "STATE_STORE_KEY_SCHEMA" in failed.reason
    fewer = judge(report(0), 2, 2, [0, 1], [0])
    assert fewer.compatible is False
    assert fewer.reason == "changed number of stateful operators: old [0, 1], new [0]"
    # Nothing that decides: no report, or a query that ended without the batch.
    assert judge(None, 2, None, [0], []).compatible is None
    assert judge(report(0), 2, 1, [0], []).compatible is None


def test_an_incompatible_result_is_a_bad_input_and_a_skipped_one_passes_by_policy() -> None:
    bad = CompatResult(False, "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] ...", 12.5, 7)
    with pytest.raises(IncompatibleUpgradeError, match=r"batch 7 in 12.5s\): \[STATE_STORE"):
        require_compatible(bad)
    skipped = CompatResult(False, "no committed batch yet", 0.1, None, skipped=True)
    assert require_compatible(skipped) is skipped
    with pytest.raises(IncompatibleUpgradeError, match="skipped"):
        require_compatible(skipped, allow_skipped=False)
    good = CompatResult(True, "re-ran", 3.0, 7, old_operators=(0,), new_operators=(0,))
    assert require_compatible(good) is good
    assert good.to_dict() == {
        "compatible": True,
        "reason": "re-ran",
        "seconds": 3.0,
        "batch": 7,
        "skipped": False,
        "old_operators": [0],
        "new_operators": [0],
    }


def spec(checkpoint: str, job_name: str = "clicks") -> JobSpec:
    return JobSpec(
        job_name=job_name,
        source=KafkaSourceSpec("broker:9092", subscribe=("t",)),
        sink=SinkSpec("kafka_exactly_once", topic="out"),
        checkpoint_location=checkpoint,
        transformation="jobs.clicks:transform",
    ).validate()


def test_the_checks_driver_runs_the_new_spec_on_the_copy_in_check_mode() -> None:
    derived = check_spec(spec("s3://b/clicks/ckpt"), "s3://b/clicks/ckpt.compat-x")
    assert derived.job_name == "clicks-compat-check"
    assert derived.checkpoint_location == "s3://b/clicks/ckpt.compat-x"
    assert derived.compat_check and derived.effective_lag_group is None
    assert derived.transformation == "jobs.clicks:transform"
    assert len(compat_job_name("j" * 100)) == 100
    assert default_scratch("s3://b/clicks/ckpt/", 1_700_000_000_123) == (
        "s3://b/clicks/ckpt.compat-20231114T221320123Z"
    )


class PlayedDriver:
    """A backend whose 'driver' acts on the copy at once, as `act` says."""

    name = "local"

    def __init__(self, act: Callable[[JobSpec], None], alive: bool = False) -> None:
        self.act = act
        self.is_alive = alive
        self.submitted: list[tuple[JobSpec, SubmitOptions]] = []
        self.killed: list[JobRef] = []

    def submit(self, spec: JobSpec, options: SubmitOptions) -> Submitted:
        self.submitted.append((spec, options))
        self.act(spec)
        ref = LocalJobRef(spec.job_name, spec.checkpoint_location, "other-host", 1, "", "")
        return Submitted(ref, {})

    def status(self, ref: JobRef) -> JobStatus:
        return JobStatus("j", self.name, self.is_alive, "x")

    def alive(self, ref: JobRef) -> bool | None:
        return self.is_alive

    def force_kill(self, ref: JobRef) -> None:
        self.killed.append(ref)


def rerun(operators: list[int], code: int = 0, message: str = "") -> Callable[[JobSpec], None]:
    """What a check's driver leaves on the copy after re-running batch 2."""

    def act(derived: JobSpec) -> None:
        root = Path(derived.checkpoint_location)
        if code == 0:
            (root / "commits/2").write_text('v1\n{"nextBatchWatermarkMs":0}')
            for op in operators:
                (root / f"state/{op}/0").mkdir(parents=True, exist_ok=True)
                (root / f"state/{op}/0/3.delta").write_bytes(b"s")
        ControlFolder(derived.checkpoint_location).write_stopped(
            report(code, message, 2 if code == 0 else 1)
        )

    return act


def options(tmp_path: Path) -> SubmitOptions:
    return SubmitOptions(str(tmp_path / "work"), restart_policy=RestartPolicy())


def leftovers(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir() if ".compat-" in p.name)


def test_a_compatible_check_reports_its_batch_and_removes_its_copy(tmp_path: Path) -> None:
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=2, planned=3)
    backend = PlayedDriver(rerun([0]))
    result = check_compatibility(backend, spec(str(ckpt)), options(tmp_path))
    assert result.compatible and result.batch == 2 and not result.skipped
    assert (result.old_operators, result.new_operators) == ((0,), (0,))
    (derived, opts), *_ = backend.submitted
    assert derived.compat_check and derived.checkpoint_location.startswith(str(ckpt) + ".compat-")
    assert opts.restart_policy is None  # a check's driver is never restarted
    assert leftovers(tmp_path) == []
    assert (ckpt / "commits/2").exists() and (ckpt / "_kafkaspark/lease.json").exists()


def test_sparks_message_and_a_lost_operator_make_it_incompatible(tmp_path: Path) -> None:
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=2, planned=2)
    message = "StreamingQueryException: [STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema"
    failed = check_compatibility(
        PlayedDriver(rerun([], 4, message)), spec(str(ckpt)), options(tmp_path)
    )
    assert not failed.compatible and failed.reason == message
    lost = check_compatibility(PlayedDriver(rerun([])), spec(str(ckpt)), options(tmp_path))
    assert not lost.compatible and "old [0], new []" in lost.reason
    assert leftovers(tmp_path) == []


def test_no_committed_batch_skips_the_check(tmp_path: Path) -> None:
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=-1, planned=0)
    backend = PlayedDriver(rerun([0]))
    result = check_compatibility(backend, spec(str(ckpt)), options(tmp_path))
    assert result.skipped and not result.compatible and result.batch is None
    assert "no committed batch" in result.reason
    assert backend.submitted == [] and leftovers(tmp_path) == []


def test_a_driver_without_an_answer_is_killed_and_the_copy_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compat_check, "POLL_S", 0.01)
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=2, planned=2)
    hung = PlayedDriver(lambda derived: None, alive=True)
    with pytest.raises(CompatCheckError, match="no result within"):
        check_compatibility(hung, spec(str(ckpt)), options(tmp_path), timeout_s=0.05)
    assert len(hung.killed) == 1 and leftovers(tmp_path) == []
    died = PlayedDriver(lambda derived: None, alive=False)
    with pytest.raises(CompatCheckError, match="without a stopped report"):
        check_compatibility(died, spec(str(ckpt)), options(tmp_path))
    assert leftovers(tmp_path) == []


def test_a_copy_location_in_use_is_refused(tmp_path: Path) -> None:
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=2, planned=2)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine/file").write_text("x")
    with pytest.raises(CompatCheckError, match="in use"):
        check_compatibility(
            PlayedDriver(rerun([0])),
            spec(str(ckpt)),
            options(tmp_path),
            scratch=str(tmp_path / "mine"),
        )
    assert (tmp_path / "mine/file").exists()
