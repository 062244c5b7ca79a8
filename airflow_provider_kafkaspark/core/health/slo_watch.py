"""What an SLO watcher decides at each poll (pure logic), shared by `StreamingWatchSensor`'s
poke mode and its trigger, and the settings of the pair in one object.

Each poll asks two questions in this order:

1. Is the driver still there? As a health watch decides it (`core/health/watch.py`, with no
   health status failing the watch): a stopped report of the watched run, a lease released or
   expired, no lease after `startup_grace_s`, or the local supervisor giving up. A stop that is
   clean (the last planned batch committed, exit 0) was made on purpose: when no new driver
   takes the lease within `restart_grace_s` (a maintenance stop), the watch ends quietly; when
   one does (a restart window, a handover), the watch follows it. Any other end fails the
   watch at once, naming why.
2. Otherwise, what do the SLOs say (`core/health/slo.py`)? A breach or an all-clear is an
   alert; anything else is watching on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, cast

from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.core.health.slo import (
    SloAlert,
    SloSettings,
    SloState,
    evaluate_slo,
)
from airflow_provider_kafkaspark.core.health.slo_inputs import WatcherInputs
from airflow_provider_kafkaspark.core.health.watch import HealthWatch
from airflow_provider_kafkaspark.core.spec.args import positive_number
from airflow_provider_kafkaspark.errors import InvalidInputError

StepState = Literal["watching", "alert", "stopped", "failed"]
# failed: the driver is gone (retryable: a new watch follows a restarted driver); invalid: bad
# input (a connection, a malformed checkpoint or control file), which no retry mends.
EventState = Literal["alert", "stopped", "failed", "invalid", "timeout"]
EVENT_STATES: tuple[EventState, ...] = ("alert", "stopped", "failed", "invalid", "timeout")
# The health watch underneath only tells whether the driver is there; its health window
# matters to nothing here, so a short one keeps few observations.
_HEALTH_WINDOW_MS = 60_000


@dataclass(frozen=True)
class WatcherSettings:
    """Everything a watcher checks and how it polls (the run it watches is not part of it):
    declared, checked and serialized here once for the sensor, its trigger and the trigger's
    serialized form."""

    slo: SloSettings
    poll_interval_s: float = 30.0
    startup_grace_s: float = 60.0
    restart_grace_s: float = 300.0
    kafka_timeout_s: float = 10.0

    @classmethod
    def checked(cls, owner: str, **values: Any) -> WatcherSettings:
        """From the flat fields of `SloSettings` and of this class; each wrong value is named
        `<owner>: <setting>`."""
        own = {f.name for f in fields(cls)} - {"slo"}
        slo = SloSettings.checked(owner, **{k: v for k, v in values.items() if k not in own})
        raw = {name: getattr(cls, name) for name in own} | {
            k: v for k, v in values.items() if k in own
        }
        return cls(
            slo=slo,
            poll_interval_s=positive_number(raw["poll_interval_s"], f"{owner}: poll_interval_s"),
            startup_grace_s=_grace(raw["startup_grace_s"], f"{owner}: startup_grace_s"),
            restart_grace_s=_grace(raw["restart_grace_s"], f"{owner}: restart_grace_s"),
            kafka_timeout_s=positive_number(raw["kafka_timeout_s"], f"{owner}: kafka_timeout_s"),
        )

    def to_dict(self) -> dict[str, Any]:
        """Flat plain JSON: what the trigger serializes."""
        return {
            **self.slo.to_dict(),
            "poll_interval_s": self.poll_interval_s,
            "startup_grace_s": self.startup_grace_s,
            "restart_grace_s": self.restart_grace_s,
            "kafka_timeout_s": self.kafka_timeout_s,
        }

    @classmethod
    def from_dict(
        cls, values: Mapping[str, Any], owner: str = "watcher settings"
    ) -> WatcherSettings:
        return cls.checked(owner, **values)


def _grace(value: object, name: str) -> float:
    return 0.0 if value == 0 and not isinstance(value, bool) else positive_number(value, name)


def job_name_of(checkpoint: str) -> str:
    """A job's name from its checkpoint location when nothing else names it: the last part
    of the path, or the one before it when that is `checkpoint` (`.../<job>/checkpoint`, as
    the example DAGs lay out a job's state)."""
    parts = [p for p in checkpoint.rstrip("/").split("/") if p]
    if len(parts) >= 2 and parts[-1] == "checkpoint":
        return parts[-2]
    return parts[-1] if parts else "job"


def stopped_cleanly(report: StoppedReport) -> bool:
    """A stop on purpose: the last planned batch committed and the driver exited 0 (drivers
    of earlier releases wrote no exit code)."""
    return report.clean and report.exit_code in (None, 0)


@dataclass(frozen=True)
class WatchStep:
    state: StepState
    reason: str
    alert: SloAlert | None = None
    # What the SLOs look like, without figures: a change of it is worth a log line.
    phase: str = ""


class SloWatch:
    """One watch over one running job; call `poll` once per poll. Not thread-safe."""

    def __init__(
        self, settings: WatcherSettings, since_batch: int | None, state: SloState | None = None
    ) -> None:
        self.settings = settings
        self.health = HealthWatch(
            since_batch=since_batch,
            min_new_batches=0,
            window_ms=_HEALTH_WINDOW_MS,
            fail_on=frozenset(),
            lease_required=True,
            startup_grace_ms=round(settings.startup_grace_s * 1000),
        )
        self.state = state if state is not None else SloState()
        # When this watch first saw the run stopped cleanly (None: a driver runs).
        self.stopped_seen_ms: int | None = None

    def poll(self, inputs: WatcherInputs, now_ms: int) -> WatchStep:
        decision = inputs.watch.decide(self.health, now_ms)
        if decision.state == "failed":  # nothing else fails a watch without fail_on
            stopped = self.health.stopped_by
            if stopped is None or not stopped_cleanly(stopped):
                return WatchStep("failed", decision.reason)
            if self.stopped_seen_ms is None:
                self.stopped_seen_ms = now_ms
            grace_ms = round(self.settings.restart_grace_s * 1000)
            if now_ms - self.stopped_seen_ms >= grace_ms:
                return WatchStep("stopped", decision.reason)
            phase = "stopped cleanly, waiting for a restart"
            waited = (now_ms - self.stopped_seen_ms) / 1000
            reason = (
                f"{phase} ({waited:.0f} of {self.settings.restart_grace_s:g} s): {decision.reason}"
            )
            return WatchStep("watching", reason, None, phase)
        self.stopped_seen_ms = None
        self.state, alert = evaluate_slo(self.settings.slo, self.state, inputs.facts, now_ms)
        phase = self.phase()
        if alert is not None:
            return WatchStep("alert", alert.message, alert, phase)
        return WatchStep("watching", f"{phase}; {self.figures(inputs)}", None, phase)

    def phase(self) -> str:
        """Where the paging rules stand, without figures."""
        state = self.state
        if state.breached:
            phase = f"in breach ({', '.join(state.breached_slos)})"
            if state.clearing_since_ms is not None:
                phase += ", clearing"
        else:
            phase = "pending breach" if state.pending_since_ms is not None else "SLOs met"
        return phase if state.lag_records is not None else f"{phase}, lag unknown"

    def figures(self, inputs: WatcherInputs) -> str:
        state = self.state
        if state.lag_records is None:
            lag = f"lag unknown ({inputs.kafka_error or 'no batch committed yet'})"
        else:
            lag = f"lag {state.lag_records:,} records"
        age = "" if state.commit_age_s is None else f", commit age {state.commit_age_s:.0f} s"
        return f"{lag}{age}; latest committed batch {state.latest_committed}"


@dataclass(frozen=True)
class WatcherEvent:
    """What the trigger fires, and what the sensor resumes from: the alert or the end, the
    state to carry on from (ages, `SloState.to_dict`), and how long the watch has lasted over
    all its deferrals (each trigger adds its own run, timed on its own clock)."""

    state: EventState
    reason: str
    alert: SloAlert | None
    slo_state: dict[str, Any]
    watched_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "reason": self.reason,
            "alert": None if self.alert is None else self.alert.to_dict(),
            "slo_state": self.slo_state,
            "watched_s": self.watched_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WatcherEvent:
        try:
            state = data["state"]
            if state not in EVENT_STATES:
                raise ValueError(f"state {state!r} is not one of {list(EVENT_STATES)}")
            raw_alert = data.get("alert")
            slo_state = data["slo_state"]
            if not isinstance(slo_state, Mapping):
                raise TypeError(f"slo_state is {type(slo_state).__name__}, not an object")
            return cls(
                cast(EventState, state),
                str(data["reason"]),
                None if raw_alert is None else SloAlert.from_dict(raw_alert),
                dict(slo_state),
                float(data["watched_s"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"watcher event: malformed ({type(exc).__name__}: {exc})"
            ) from exc


def watch_summary(state: str, reason: str, slo: SloState, watched_s: float) -> dict[str, Any]:
    """The small result a watcher returns as XCom when it ends."""
    return {
        "state": state,
        "reason": reason,
        "breaches": slo.breaches,
        "in_breach": slo.breached,
        "breached_slos": list(slo.breached_slos),
        "lag_records": slo.lag_records,
        "commit_age_s": slo.commit_age_s,
        "latest_committed": slo.latest_committed,
        "watched_s": round(watched_s, 1),
    }
