"""The upgrade's compatibility check: the new job code run once against a copy of the running
job's state, before the running job is touched.

The running checkpoint is copied as of its last committed batch N, less `commits/N` and the
state versions N+1 (`core/state/rerun_copy.py`), next to it on the same storage. A driver of
the new spec, started through the job's own deployment backend (so on the job's Spark),
runs on that copy in compatibility-check mode (`JobSpec.compat_check`): Spark runs batch N
again from its planned offsets, loading the old state into the new code's operators, writes
into Spark's `noop` sink, and the query ends after that one batch. What Spark refuses when it
reads old state (schemas, operators, partitioning), and a module that does not import, fails
that batch with Spark's own message; a changed set of stateful operators, which Spark does
not refuse, is found by comparing the operators with state in the old checkpoint with those
the re-run wrote. The copy is removed in every case; the running job never sees the check
(no lease, no stop request, no lag commit, no sink write of its own).
"""

from __future__ import annotations

import logging
import socket
import time
from dataclasses import dataclass, field, replace
from typing import Any

from airflow_provider_kafkaspark.backends.base import JobBackend, SubmitOptions
from airflow_provider_kafkaspark.core.cluster.host_process import reap
from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef, LocalJobRef
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.state.checkpoint import STATE_DIR, CheckpointReader
from airflow_provider_kafkaspark.core.state.rerun_copy import (
    copy_for_rerun,
    operators_change,
    stateful_operators,
)
from airflow_provider_kafkaspark.core.storage.location import Location, open_location
from airflow_provider_kafkaspark.errors import KafkaSparkError
from airflow_provider_kafkaspark.lifecycle.errors import CompatCheckError, IncompatibleUpgradeError

log = logging.getLogger(__name__)

COMPAT_SUFFIX = "-compat-check"
EXIT_OK = 0
POLL_S = 1.0
# How long a driver that wrote its report may take to exit before the copy is removed.
EXIT_GRACE_S = 60.0


@dataclass(frozen=True)
class CompatResult:
    """How the check ended: `compatible`, and why not (`reason`: Spark's message, or the
    operators that changed); `skipped` when the running job had committed no batch yet
    (nothing to check: the caller's policy decides). `seconds`: the whole check, copy and
    cleanup included."""

    compatible: bool
    reason: str
    seconds: float
    batch: int | None
    skipped: bool = False
    old_operators: tuple[int, ...] = field(default_factory=tuple)
    new_operators: tuple[int, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for XCom and the CLI."""
        return {
            "compatible": self.compatible,
            "reason": self.reason,
            "seconds": round(self.seconds, 3),
            "batch": self.batch,
            "skipped": self.skipped,
            "old_operators": list(self.old_operators),
            "new_operators": list(self.new_operators),
        }


def require_compatible(result: CompatResult, *, allow_skipped: bool = True) -> CompatResult:
    """`result` when the upgrade may go on; `IncompatibleUpgradeError` (a bad input: the task
    fails without retries) when the new code is incompatible, or when the check was skipped
    and `allow_skipped` is False."""
    if result.skipped and not allow_skipped:
        raise IncompatibleUpgradeError(f"compatibility check skipped: {result.reason}")
    if not result.compatible and not result.skipped:
        raise IncompatibleUpgradeError(
            f"the new job code is incompatible with the running job's state (checked on "
            f"batch {result.batch} in {result.seconds:.1f}s): {result.reason}"
        )
    return result


def compat_job_name(job_name: str) -> str:
    """The check driver's job name: the job's, marked (and short enough to stay valid)."""
    return job_name[: 100 - len(COMPAT_SUFFIX)] + COMPAT_SUFFIX


def default_scratch(checkpoint: str, at_ms: int) -> str:
    """Where the copy goes by default: beside the checkpoint, on the same storage."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(at_ms / 1000))
    return f"{checkpoint.rstrip('/')}.compat-{stamp}{at_ms % 1000:03d}Z"


def check_spec(spec: JobSpec, scratch: str) -> JobSpec:
    """The spec of the check's driver: the new spec on the copy, in check mode, without
    lag commits or a standby."""
    return replace(
        spec,
        job_name=compat_job_name(spec.job_name),
        checkpoint_location=scratch,
        compat_check=True,
        lag_group="",
        standby_token=None,
    ).validate()


@dataclass(frozen=True)
class Verdict:
    """The check's answer; `compatible` None when the driver said nothing that decides."""

    compatible: bool | None
    reason: str


def judge(
    report: StoppedReport | None,
    batch: int,
    committed_after: int | None,
    old_operators: list[int],
    new_operators: list[int],
) -> Verdict:
    """The verdict from what the check's driver left: its stopped report, the last batch the
    copy committed, and the stateful operators before and after."""
    if report is None:
        return Verdict(None, "the check's driver ended without a stopped report")
    if report.exit_code != EXIT_OK:
        return Verdict(False, report.message or report.reason)
    if committed_after != batch:
        return Verdict(
            None,
            f"the check's query ended without re-running batch {batch} "
            f"(last committed: {committed_after}): {report.reason}",
        )
    changed = operators_change(old_operators, new_operators)
    if changed is not None:
        return Verdict(False, changed)
    return Verdict(True, f"batch {batch} re-ran on the new code over the old state")


def check_compatibility(
    backend: JobBackend,
    spec: JobSpec,
    options: SubmitOptions,
    *,
    scratch: str | None = None,
    timeout_s: float = 600,
) -> CompatResult:
    """Run the new `spec` once against a copy of the running job's state (see the module doc).

    `spec` is the new spec as a submit gives it to the backend (with the connection's
    servers and settings); its `checkpoint_location` is the running job's checkpoint, which
    is only read. `scratch`: where the copy goes (default: beside the checkpoint); it must
    not exist and is removed at the end. `timeout_s` bounds the check's driver (from its
    submit to its end); past it the driver is killed and `CompatCheckError` raised, as when
    the driver dies without a word. The result's `compatible` is False for an incompatible
    spec; `require_compatible` turns that into the typed error."""
    started = time.monotonic()
    reader = CheckpointReader(spec.checkpoint_location)
    scratch = scratch or default_scratch(spec.checkpoint_location, now_ms())
    target = open_location(scratch)
    if target.has_files():
        raise CompatCheckError(f"{target.url}: the compatibility check's copy location is in use")
    try:
        copy = copy_for_rerun(reader, target) if reader.exists() else None
        if copy is None:
            return CompatResult(
                compatible=False,
                reason=f"{reader.url}: no committed batch yet, no state to check against",
                seconds=time.monotonic() - started,
                batch=None,
                skipped=True,
            )
        log.info(
            "compatibility check of %s: %d files copied to %s to re-run batch %d",
            spec.job_name,
            copy.files,
            target.url,
            copy.batch,
        )
        report, where = _run_check(backend, check_spec(spec, scratch), options, timeout_s)
        after = CheckpointReader(target).position().latest_committed
        new_operators = stateful_operators(
            (rel for rel, _size in target.walk_files(STATE_DIR)), version=copy.batch + 1
        )
        verdict = judge(report, copy.batch, after, copy.old_operators, new_operators)
        if verdict.compatible is None:
            raise CompatCheckError(
                f"compatibility check of {spec.job_name}: {verdict.reason} (driver: {where})"
            )
        result = CompatResult(
            compatible=verdict.compatible,
            reason=verdict.reason,
            seconds=time.monotonic() - started,
            batch=copy.batch,
            old_operators=tuple(copy.old_operators),
            new_operators=tuple(new_operators),
        )
    finally:
        _remove(target)
    result = replace(result, seconds=time.monotonic() - started)
    log.info("compatibility check of %s: %s", spec.job_name, result.to_dict())
    return result


def _run_check(
    backend: JobBackend, spec: JobSpec, options: SubmitOptions, timeout_s: float
) -> tuple[StoppedReport | None, str]:
    """Start the check's driver (never restarted) and wait, bounded, for its report;
    returns the report and where the driver's log is (or what it was)."""
    submitted = backend.submit(spec, replace(options, restart_policy=None))
    ref = submitted.ref
    where = str(submitted.details.get("log_file") or ref)
    control = ControlFolder(spec.checkpoint_location)
    deadline = time.monotonic() + timeout_s
    while True:
        report = control.read_stopped()
        alive = _alive(backend, ref)
        if report is not None:
            _wait_gone(backend, ref, EXIT_GRACE_S)
            return report, where
        if alive is False:
            return control.read_stopped(), where  # written just before it exited, or never
        if time.monotonic() > deadline:
            backend.force_kill(ref)
            raise CompatCheckError(
                f"compatibility check of {spec.job_name}: no result within {timeout_s:g}s; "
                f"its driver was killed ({where})"
            )
        time.sleep(POLL_S)


def _alive(backend: JobBackend, ref: JobRef) -> bool | None:
    alive = backend.alive(ref)
    if isinstance(ref, LocalJobRef) and ref.host == socket.gethostname():
        reap(ref.pid)  # our own child: no zombie, so that its end shows
    return alive


def _wait_gone(backend: JobBackend, ref: JobRef, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while _alive(backend, ref) is True and time.monotonic() < deadline:
        time.sleep(0.2)


def _remove(target: Location) -> None:
    """Remove the copy (never the job's checkpoint: `target` is the check's own location)."""
    try:
        if target.exists():
            target.fs.rm(target.path(), recursive=True)
    except (OSError, KafkaSparkError) as exc:
        log.warning("compatibility check: could not remove its copy %s: %s", target.url, exc)
