"""What a health sensor decides at each poll: waiting, healthy or failed (pure logic).

Shared by the sensor's poke mode and its deferrable trigger, so both decide alike. Each poll
gives one `Observation` (or None while the checkpoint has not been written yet), the lease and
the stopped report of the control folder, and the time. Rules, in this order:

1. failed, the driver is gone:
   - a `stopped.json` of the watched run: written by the lease's own holder, by a driver this
     watch saw holding the lease, or, when no live driver holds the lease, written at or
     after `since_ms` (when given), at or after the latest submit (its submitted marker), or
     naming a committed batch after `since_batch`; a stopped report from an earlier run (a new
     driver is starting) is ignored. A bad job (exit 4:
     an unimportable transformation, SQL that does not parse, a missing topic) says why;
   - the local supervisor of the watched run (started at or after the latest submit, or
     ended after `since_ms` or the watch's start) ended: its restart budget is spent, or its
     runner exited for good, so no driver will come back;
   - with `lease_required`: no fresh lease once this watch saw one, an expired lease taken
     after the watch started, or no fresh lease at all after `startup_grace_ms` (a driver
     takes the lease a while after it is submitted: Spark must start first).
2. failed, a health status in `fail_on` (STALLED, STOPPED and REWOUND by default; LAGGING
   only when the caller puts it there). STALLED, STOPPED and LAGGING are not fatal within
   `startup_grace_ms` of the watch's start or of the current driver taking the lease (a
   driver restarting from a checkpoint with a backlog plans no batch until Spark is up);
   REWOUND always is.
3. healthy: at least `min_new_batches` batches committed after `since_batch`, and the health
   status is OK; or idle: the status is OK, a driver of this run holds the lease, and the
   checkpoint is at the end of every partition (lag 0). Spark runs no batch without input,
   so a job on a quiet topic would otherwise never look healthy.
4. waiting otherwise (UNKNOWN, LAGGING not in `fail_on`, too few new batches, no lease yet).

Observations are kept only as far back as the window needs, and only from the current
driver: when another driver takes the lease, the history starts again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.core.control.reports import StoppedReport, SupervisorState
from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker
from airflow_provider_kafkaspark.core.health.rules import (
    HealthPolicy,
    HealthReport,
    HealthStatus,
    Observation,
    committed_batches_since,
    evaluate_health,
)
from airflow_provider_kafkaspark.core.spec.xcom_values import parse_batch_id
from airflow_provider_kafkaspark.errors import InvalidInputError

WatchState = Literal["waiting", "healthy", "failed", "timeout"]
WATCH_STATES: tuple[WatchState, ...] = ("waiting", "healthy", "failed", "timeout")
DEFAULT_FAIL_ON: frozenset[HealthStatus] = frozenset(
    {HealthStatus.STALLED, HealthStatus.STOPPED, HealthStatus.REWOUND}
)
# Statuses that can fail a watch. OK never fails; UNKNOWN is what every watch starts with.
FAILABLE: frozenset[HealthStatus] = frozenset(
    {HealthStatus.LAGGING, HealthStatus.STALLED, HealthStatus.STOPPED, HealthStatus.REWOUND}
)
# Statuses a starting driver shows for a while without anything being wrong.
_STARTUP_TOLERATED: frozenset[HealthStatus] = frozenset(
    {HealthStatus.LAGGING, HealthStatus.STALLED, HealthStatus.STOPPED}
)
DEFAULT_STARTUP_GRACE_MS = 60_000
# A poll interval far below the window would keep many observations; the rules only need a
# trend, so the oldest are dropped beyond this many.
MAX_OBSERVATIONS = 600


@dataclass(frozen=True)
class WatchDecision:
    state: WatchState
    reason: str
    report: HealthReport | None
    new_batches: int

    @property
    def done(self) -> bool:
        return self.state != "waiting"

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "reason": self.reason,
            "report": None if self.report is None else self.report.to_dict(),
            "new_batches": self.new_batches,
        }

    def summary(self) -> dict[str, Any]:
        """The small result a sensor returns as XCom."""
        report = self.report
        return {
            "state": self.state,
            "reason": self.reason,
            "new_batches": self.new_batches,
            "status": None if report is None else report.status.value,
            "latest_committed": None if report is None else report.figures.get("latest_committed"),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WatchDecision:
        try:
            state = data["state"]
            if state not in WATCH_STATES:
                raise ValueError(f"state {state!r} is not one of {list(WATCH_STATES)}")
            raw_report = data.get("report")
            report = None if raw_report is None else HealthReport.from_dict(raw_report)
            new_batches = data.get("new_batches", 0)
            if isinstance(new_batches, bool):
                raise TypeError("new_batches is a bool")
            return cls(cast(WatchState, state), str(data["reason"]), report, int(new_batches))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"health watch decision: malformed ({type(exc).__name__}: {exc})"
            ) from exc


def parse_fail_on(names: Iterable[str | HealthStatus] | str | None) -> frozenset[HealthStatus]:
    """Health status names (case-insensitive) that fail a watch; None -> the default set."""
    if names is None:
        return DEFAULT_FAIL_ON
    items = [names] if isinstance(names, str | HealthStatus) else list(names)
    statuses: set[HealthStatus] = set()
    for item in items:
        if isinstance(item, HealthStatus):
            status = item
        else:
            try:
                status = HealthStatus[str(item).strip().upper()]
            except KeyError:
                raise InvalidInputError(
                    f"fail_on: unknown health status {str(item)[:40]!r}; choose from "
                    f"{sorted(s.value for s in FAILABLE)}"
                ) from None
        if status not in FAILABLE:
            raise InvalidInputError(
                f"fail_on: {status.value} cannot fail a watch; choose from "
                f"{sorted(s.value for s in FAILABLE)}"
            )
        statuses.add(status)
    return frozenset(statuses)


class HealthWatch:
    """One watch over one streaming run; call `observe` once per poll. Not thread-safe."""

    def __init__(
        self,
        since_batch: int | None,
        min_new_batches: int,
        window_ms: int,
        policy: HealthPolicy | None = None,
        fail_on: frozenset[HealthStatus] = DEFAULT_FAIL_ON,
        lease_required: bool = True,
        *,
        since_ms: int | None = None,
        started_ms: int | None = None,
        startup_grace_ms: int = DEFAULT_STARTUP_GRACE_MS,
    ) -> None:
        self.since_batch = parse_batch_id(since_batch)
        if isinstance(min_new_batches, bool) or not isinstance(min_new_batches, int):
            raise InvalidInputError(f"min_new_batches: expected an int, got {min_new_batches!r}")
        if min_new_batches < 0:
            raise InvalidInputError(f"min_new_batches must be >= 0, got {min_new_batches}")
        if window_ms <= 0:
            raise InvalidInputError(f"health window must be > 0 ms, got {window_ms}")
        if startup_grace_ms < 0:
            raise InvalidInputError(f"startup grace must be >= 0 ms, got {startup_grace_ms}")
        self.fail_on = parse_fail_on(fail_on)
        self.min_new_batches = min_new_batches
        self.window_ms = int(window_ms)
        self.policy = policy or HealthPolicy()
        self.lease_required = lease_required
        self.since_ms = since_ms
        self.startup_grace_ms = int(startup_grace_ms)
        self._started_ms = started_ms if started_ms is not None else since_ms
        self._observations: list[Observation] = []
        # The driver this watch saw holding a fresh lease, and when it took the lease.
        self._owner: Lease | None = None
        self.last: WatchDecision | None = None
        # The stopped report that ended the watched run at the last `observe`, if one did:
        # whether it stopped cleanly is for the caller to judge (a watcher ends quietly on a
        # clean stop). Reset at each `observe`: a driver started since may end otherwise.
        self.stopped_by: StoppedReport | None = None

    @property
    def observations(self) -> tuple[Observation, ...]:
        return tuple(self._observations)

    def observe(
        self,
        observation: Observation | None,
        lease: Lease | None,
        stopped: StoppedReport | None,
        now_ms: int,
        *,
        supervisor: SupervisorState | None = None,
        submitted: SubmittedMarker | None = None,
    ) -> WatchDecision:
        """The decision after one poll. `observation` is None while the checkpoint has no
        position yet (the driver has not written it). `submitted` names the driver log that a
        failure points to."""
        if self._started_ms is None:
            self._started_ms = now_ms
        self.stopped_by = None
        fresh = lease is not None and lease.is_fresh(now_ms)
        if fresh and lease is not None:
            self._follow(lease)
        if observation is not None:
            self._remember(observation)

        gone = self._driver_gone(lease, fresh, stopped, now_ms, submitted)
        gone = gone or self._supervision_ended(supervisor, submitted)
        if gone is not None:
            if submitted is not None and submitted.log_file:
                gone += f" (driver log: {submitted.log_file})"
            return self._decide("failed", f"driver gone: {gone}", self._report_or_none())

        if not self._observations:
            waiting = "checkpoint not written yet"
            if self.lease_required and not fresh:
                waiting += "; no driver holds the lease yet"
            return self._decide("waiting", waiting, None)

        report = evaluate_health(self._observations, window_ms=self.window_ms, policy=self.policy)
        new = committed_batches_since(self._observations, self.since_batch)
        since = "the start" if self.since_batch is None else f"batch {self.since_batch}"
        progress = f"{new} of {self.min_new_batches} new batches committed since {since}"
        status = report.status
        if status in self.fail_on:
            if status in _STARTUP_TOLERATED and self._in_startup(now_ms):
                return self._decide(
                    "waiting",
                    f"health {status.value} within the startup grace: {report.reason}; {progress}",
                    report,
                    new,
                )
            return self._decide("failed", f"health {status.value}: {report.reason}", report, new)
        if status is HealthStatus.OK and new >= self.min_new_batches:
            return self._decide("healthy", f"{progress}; health OK: {report.reason}", report, new)
        if status is HealthStatus.OK and fresh and self._idle_at_end(lease):
            return self._decide(
                "healthy",
                f"idle: a live driver holds the lease and the checkpoint is at the end of "
                f"every partition (lag 0); {progress}; health OK: {report.reason}",
                report,
                new,
            )
        if self.lease_required and not fresh:
            progress += "; no driver holds the lease yet"
        return self._decide(
            "waiting", f"{progress}; health {status.value}: {report.reason}", report, new
        )

    def timed_out(self, now_ms: int, timeout_s: float) -> WatchDecision:
        """The decision when the caller gives up: the last reason, for the log and XCom."""
        last = self.last
        reason = f"no decision within {timeout_s:g} s"
        if last is not None:
            reason += f"; last: {last.reason}"
        report = None if last is None else last.report
        return WatchDecision("timeout", reason, report, 0 if last is None else last.new_batches)

    # -- internals ---------------------------------------------------------------------------

    def _decide(
        self,
        state: WatchState,
        reason: str,
        report: HealthReport | None,
        new_batches: int | None = None,
    ) -> WatchDecision:
        if new_batches is None:
            new_batches = committed_batches_since(self._observations, self.since_batch)
        decision = WatchDecision(state, reason, report, new_batches)
        self.last = decision
        return decision

    def _report_or_none(self) -> HealthReport | None:
        if not self._observations:
            return None
        return evaluate_health(self._observations, window_ms=self.window_ms, policy=self.policy)

    def _follow(self, lease: Lease) -> None:
        if self._owner is None or self._owner.owner_id != lease.owner_id:
            if self._owner is not None:
                # Another driver now: its progress starts from its own first observation.
                self._observations.clear()
            self._owner = lease
        self._observations = [o for o in self._observations if o.at_ms >= lease.started_at_ms]

    def _remember(self, observation: Observation) -> None:
        if self._owner is not None and observation.at_ms < self._owner.started_at_ms:
            return
        kept = [o for o in self._observations if o.at_ms >= observation.at_ms - self.window_ms]
        kept.append(observation)
        kept.sort(key=lambda o: o.at_ms)
        self._observations = kept[-MAX_OBSERVATIONS:]

    def _idle_at_end(self, lease: Lease | None) -> bool:
        """Lag 0 at the newest observation, read by the driver of this run."""
        if lease is None or self._owner is None or lease.owner_id != self._owner.owner_id:
            return False
        if self.since_ms is not None and lease.started_at_ms < self.since_ms:
            return False
        newest = self._observations[-1]
        return newest.latest_committed is not None and newest.lag_records == 0

    def _supervision_ended(
        self, supervisor: SupervisorState | None, submitted: SubmittedMarker | None
    ) -> str | None:
        if supervisor is None or not supervisor.ended or supervisor.exited_at_ms is None:
            return None
        if submitted is not None and self.since_ms is None:
            if supervisor.started_at_ms < submitted.submitted_at_ms:
                return None  # the supervisor of an earlier submit
        else:
            since = self.since_ms if self.since_ms is not None else self._started_ms
            if since is not None and supervisor.exited_at_ms < since:
                return None  # an earlier run's supervisor
        why = "its restart budget is spent" if supervisor.gave_up else "supervision ended"
        return (
            f"the local supervisor ended after {supervisor.attempt} driver start(s): {why} "
            f"(last exit {supervisor.last_exit})"
        )

    def _in_startup(self, now_ms: int) -> bool:
        anchors = [now_ms if self._started_ms is None else self._started_ms]
        if self._owner is not None:
            anchors.append(self._owner.started_at_ms)
        return now_ms < max(anchors) + self.startup_grace_ms

    def _driver_gone(
        self,
        lease: Lease | None,
        fresh: bool,
        stopped: StoppedReport | None,
        now_ms: int,
        submitted: SubmittedMarker | None,
    ) -> str | None:
        if stopped is not None and self._stopped_counts(stopped, lease, fresh, submitted):
            self.stopped_by = stopped
            return stopped.describe()
        if not self.lease_required or fresh:
            return None
        started = self._started_ms if self._started_ms is not None else now_ms
        if lease is not None:
            age_s = lease.age_ms(now_ms) / 1000
            expired = (
                f"the lease of {lease.describe()} expired: heartbeat {age_s:.0f} s ago, "
                f"beyond its {lease.ttl_ms / 1000:.0f} s"
            )
            seen = self._owner is not None and self._owner.owner_id == lease.owner_id
            if seen or lease.started_at_ms >= started:
                return expired
        if self._owner is not None and lease is None:
            return f"{self._owner.describe()} released the lease without a stopped report"
        if now_ms < started + self.startup_grace_ms:
            return None
        waited = f"{(now_ms - started) / 1000:.0f} s"
        if lease is not None:
            return f"{expired}; no live driver after {waited}"
        return f"no driver holds the checkpoint's lease after {waited}"

    def _stopped_counts(
        self,
        stopped: StoppedReport,
        lease: Lease | None,
        fresh: bool,
        submitted: SubmittedMarker | None,
    ) -> bool:
        owner = stopped.owner_id
        if owner is not None and lease is not None and owner == lease.owner_id:
            return True  # the lease's own holder says it stopped
        if owner is not None and self._owner is not None and owner == self._owner.owner_id:
            return True  # the driver this watch followed stopped
        if fresh:
            return False  # a live driver of another run holds the checkpoint
        if self.since_ms is not None:
            return stopped.stopped_at_ms >= self.since_ms
        if submitted is not None and stopped.stopped_at_ms >= submitted.submitted_at_ms:
            return True  # the driver of the latest submit stopped
        return _batch(stopped.last_committed_batch) > _batch(self.since_batch)


def _batch(batch_id: int | None) -> int:
    return -1 if batch_id is None else batch_id
