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
the re-run wrote. The running job never sees the check (no lease, no stop request, no lag
commit, no sink write of its own).

The copy is removed in every case, all of it, and only it (a location named
`<name>.compat-<stamp>`, never the checkpoint or anything holding it): once the check's driver
is gone, as its backend tells (asked a bounded number of times within a bounded time), since
a driver still shutting down may write into the copy after its report (its lease, its
progress, Spark's logs); a driver not known to be gone by then is not waited for any longer:
the copy is removed, looked at again a few seconds later and removed again. On an object
store the copy's folders go too, deepest first, after its objects: a store may keep listing
an emptied folder (SeaweedFS does), and the copy's prefix would stay listed beside the
checkpoint. What cannot be removed is logged, naming its URL, and never changes the verdict.
"""

from __future__ import annotations

import logging
import math
import posixpath
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
from airflow_provider_kafkaspark.core.storage.tree_removal import listed_entries, remove_tree
from airflow_provider_kafkaspark.lifecycle.errors import CompatCheckError, IncompatibleUpgradeError

log = logging.getLogger(__name__)

COMPAT_SUFFIX = "-compat-check"
# What names a check's copy (`default_scratch`): the only location the check ever removes.
SCRATCH_MARK = ".compat-"
EXIT_OK = 0
# Between looks at the check's driver while it runs; the waits below are counted in it.
POLL_S = 1.0
# A driver that wrote its report, or was killed, is asked every POLL_S / GONE_POLLS_PER_POLL
# whether it is gone, at most GONE_POLLS times (a minute with the default POLL_S): a driver
# shutting down may still write into the copy (its lease, its progress, Spark's logs).
GONE_POLLS = 300
GONE_POLLS_PER_POLL = 5
# A copy removed while its driver was not known to be gone is looked at again this many of
# those polls later (5 s with the default POLL_S), and what came back is removed.
SETTLE_POLLS = 25


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


def scratch_refusal(checkpoint: str, scratch: str) -> str | None:
    """Why `scratch` may not hold a check's copy of `checkpoint`, or None when it may. The copy
    is removed at the end, so it must be a location of its own, named as `default_scratch`
    names it (`<name>.compat-<stamp>`), and neither the checkpoint, nor in it, nor holding it."""
    copy, source = scratch.rstrip("/"), checkpoint.rstrip("/")
    head, mark, stamp = posixpath.basename(copy).partition(SCRATCH_MARK)
    if not (head and mark and stamp):
        return (
            f"{scratch}: a compatibility check's copy must be named <name>{SCRATCH_MARK}<stamp> "
            f"(it is removed at the end)"
        )
    if copy == source or source.startswith(copy + "/") or copy.startswith(source + "/"):
        return (
            f"{scratch}: a compatibility check's copy must be neither the checkpoint "
            f"{checkpoint}, nor in it, nor hold it (it is removed at the end)"
        )
    return None


def settle_polls(gone: bool | None) -> int:
    """How many gone-polls the look that follows the copy's removal waits: none once the driver
    is known to be gone (nothing of it writes any more), else SETTLE_POLLS (still running, or
    not known: it may write into the copy after the removal)."""
    return 0 if gone is True else SETTLE_POLLS


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
    not exist, must be named `<name>.compat-<stamp>` and is removed at the end, once the
    check's driver is gone. `timeout_s` bounds the check's driver (from its submit to its
    end); past it the driver is killed and `CompatCheckError` raised, as when the driver dies
    without a word. The result's `compatible` is False for an incompatible spec;
    `require_compatible` turns that into the typed error."""
    started = time.monotonic()
    reader = CheckpointReader(spec.checkpoint_location)
    scratch = scratch or default_scratch(spec.checkpoint_location, now_ms())
    target = open_location(scratch)
    if target.has_files():
        raise CompatCheckError(f"{target.url}: the compatibility check's copy location is in use")
    refusal = scratch_refusal(spec.checkpoint_location, scratch)
    if refusal is not None:
        raise CompatCheckError(refusal)
    ref: JobRef | None = None
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
        derived = check_spec(spec, scratch)
        # Never restarted: a second driver would run on a copy that is being removed.
        submitted = backend.submit(derived, replace(options, restart_policy=None))
        ref = submitted.ref
        where = str(submitted.details.get("log_file") or ref)
        report = _await_report(backend, ref, derived, where, timeout_s)
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
        _clean_up(backend, ref, target, spec.checkpoint_location)
    result = replace(result, seconds=time.monotonic() - started)
    log.info("compatibility check of %s: %s", spec.job_name, result.to_dict())
    return result


def _await_report(
    backend: JobBackend, ref: JobRef, spec: JobSpec, where: str, timeout_s: float
) -> StoppedReport | None:
    """Wait, bounded, for the report of the check's driver `ref`; None when the driver ended
    without one. Past `timeout_s` the driver is killed and `CompatCheckError` raised (`where`:
    its log, or what it was)."""
    control = ControlFolder(spec.checkpoint_location)
    deadline = time.monotonic() + timeout_s
    for _ in range(math.ceil(timeout_s / POLL_S) + 1):
        report = control.read_stopped()
        if report is not None:
            return report
        if _alive(backend, ref) is False:
            return control.read_stopped()  # written just before it exited, or never
        if time.monotonic() > deadline:
            break
        time.sleep(POLL_S)
    backend.force_kill(ref)
    raise CompatCheckError(
        f"compatibility check of {spec.job_name}: no result within {timeout_s:g}s; "
        f"its driver was killed ({where})"
    )


def _alive(backend: JobBackend, ref: JobRef) -> bool | None:
    alive = backend.alive(ref)
    if isinstance(ref, LocalJobRef) and ref.host == socket.gethostname():
        reap(ref.pid)  # our own child: no zombie, so that its end shows
    return alive


def _gone_poll_s() -> float:
    return POLL_S / GONE_POLLS_PER_POLL


def _wait_gone(backend: JobBackend, ref: JobRef) -> bool | None:
    """Whether the check's driver is gone: True once its backend says so; False when it still
    runs after GONE_POLLS polls (or their time); None when the backend cannot tell (a driver
    of another host), which waiting would not change, or did not answer."""
    poll_s = _gone_poll_s()
    deadline = time.monotonic() + GONE_POLLS * poll_s
    answer: bool | None = None
    for _ in range(GONE_POLLS):
        try:
            alive = _alive(backend, ref)
        except Exception as exc:  # noqa: BLE001 - asked again; the copy goes in any case
            log.warning("compatibility check: could not learn whether %s is gone: %s", ref, exc)
            answer = None
        else:
            if alive is None:
                return None
            if not alive:
                return True
            answer = False
        if time.monotonic() >= deadline:
            break
        time.sleep(poll_s)
    return answer


def _clean_up(backend: JobBackend, ref: JobRef | None, target: Location, checkpoint: str) -> None:
    """Remove the check's copy once its driver `ref` (None: none was started) is gone, as the
    module doc says. Never raises: the verdict stands whatever the removal meets, and what is
    left is logged, naming the copy's URL."""
    refusal = scratch_refusal(checkpoint, target.url)
    if refusal is not None:
        log.error("compatibility check: %s; nothing removed", refusal)
        return
    gone = True if ref is None else _wait_gone(backend, ref)
    settle_s = settle_polls(gone) * _gone_poll_s()
    if gone is not True:
        log.warning(
            "compatibility check: its driver (%s) is %s; its copy %s is removed now, and again "
            "in %.0fs if anything came back",
            ref,
            "still running" if gone is False else "not known to be gone",
            target.url,
            settle_s,
        )
    remove_tree(target, thorough=False)
    time.sleep(settle_s)
    left = listed_entries(target)
    if left:
        log.info(
            "compatibility check: %d entries of its copy %s listed after its removal "
            "(first: %s); removing them",
            len(left),
            target.url,
            ", ".join(left[:5]),
        )
        remove_tree(target, thorough=True)
        left = listed_entries(target)
    if left:
        log.warning(
            "compatibility check: its copy %s still holds %d entries after two removals "
            "(first: %s); remove that prefix by hand",
            target.url,
            len(left),
            ", ".join(left[:5]),
        )
