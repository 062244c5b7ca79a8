"""Service-level objectives of a running streaming job, and when to page about them (pure).

Two objectives, each optional:

- lag: the records the checkpoint has not read yet (Kafka's end offsets minus the committed
  offsets, summed over the partitions the checkpoint has committed) stay at or below
  `max_lag_records`;
- commit age: records never wait longer than `max_commit_age_s` without a batch committing.
  The age runs from the later of the moment this watch first saw the latest committed batch
  and the moment it first saw records waiting (lag > 0) since then: an idle topic (lag 0) has
  age 0 however long ago its last batch was, and records arriving after a quiet hour start
  at 0 rather than at an hour.

Every time here is on the watching host's own clock (`now_ms` of the caller): when a batch
committed is never read from the checkpoint's files, so no other host's clock is compared with
this one's. The age is therefore at least one poll short at the start of a watch (the batch
was committed some time before the watch saw it).

Unknown is not 0: while the lag cannot be measured (Kafka did not answer, no batch committed
yet) neither objective can be judged. An unknown verdict never counts as a breach and never
clears one; a breach pending its `breach_after_s` stays pending through it, a clearing pending
its `clear_after_s` starts again after it (the alarm errs towards paging and away from an
early all-clear).

Paging: a breach is announced once the breach condition (any objective failing) has held for
`breach_after_s`; while it goes on, it is announced again after `renotify_after_s`, then after
twice that, four times, ... up to `renotify_max_s` between announcements; an objective that
starts failing during a breach is announced at once. The all-clear comes once every objective
has been met for `clear_after_s`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, cast

from airflow_provider_kafkaspark.core.kafka.offsets import TopicOffsets, records_by_topic
from airflow_provider_kafkaspark.core.spec.args import positive_number
from airflow_provider_kafkaspark.errors import InvalidArgumentError, InvalidInputError

AlertKind = Literal["breach", "clear"]
ALERT_KINDS: tuple[AlertKind, ...] = ("breach", "clear")
LAG = "lag"
COMMIT_AGE = "commit_age"
# The back-off doubles at most this many times (2**40 s is far beyond any cap anyway).
_MAX_DOUBLINGS = 40


@dataclass(frozen=True)
class SloSettings:
    """The objectives and the paging rules of one watch; at least one objective is set."""

    max_lag_records: int | None = None
    max_commit_age_s: float | None = None
    breach_after_s: float = 0.0
    clear_after_s: float = 60.0
    renotify_after_s: float | None = 1800.0
    renotify_max_s: float = 4 * 3600.0

    @classmethod
    def checked(cls, owner: str, **values: Any) -> SloSettings:
        """The settings from `values` (the fields above), each checked and named as
        `<owner>: <setting>` when wrong."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise InvalidArgumentError(f"{owner}: unknown SLO settings {unknown}")
        raw = {f.name: getattr(cls, f.name) for f in fields(cls)} | values
        lag, age = raw["max_lag_records"], raw["max_commit_age_s"]
        if lag is None and age is None:
            raise InvalidArgumentError(
                f"{owner}: give max_lag_records, max_commit_age_s or both: "
                f"a watch without an objective never pages"
            )
        if lag is not None and (isinstance(lag, bool) or not isinstance(lag, int) or lag < 0):
            raise InvalidArgumentError(
                f"{owner}: max_lag_records must be an int >= 0, got {str(lag)[:40]!r}"
            )
        renotify = raw["renotify_after_s"]
        return cls(
            max_lag_records=lag,
            max_commit_age_s=None
            if age is None
            else positive_number(age, f"{owner}: max_commit_age_s"),
            breach_after_s=_non_negative(raw["breach_after_s"], f"{owner}: breach_after_s"),
            clear_after_s=_non_negative(raw["clear_after_s"], f"{owner}: clear_after_s"),
            renotify_after_s=None
            if renotify is None
            else positive_number(renotify, f"{owner}: renotify_after_s"),
            renotify_max_s=positive_number(raw["renotify_max_s"], f"{owner}: renotify_max_s"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], owner: str = "SLO settings") -> SloSettings:
        return cls.checked(owner, **values)

    def renotify_interval_ms(self, sent: int) -> int | None:
        """How long after the `sent`-th announcement of one breach the next one is due
        (None: never): `renotify_after_s` doubled `sent - 1` times, at most `renotify_max_s`
        (or `renotify_after_s` when that is larger)."""
        if self.renotify_after_s is None:
            return None
        doublings = min(max(sent - 1, 0), _MAX_DOUBLINGS)
        cap = max(self.renotify_max_s, self.renotify_after_s)
        return round(min(self.renotify_after_s * float(2**doublings), cap) * 1000)

    def describe(self) -> str:
        parts = []
        if self.max_lag_records is not None:
            parts.append(f"lag <= {self.max_lag_records:,} records")
        if self.max_commit_age_s is not None:
            parts.append(f"commit age <= {self.max_commit_age_s:g} s")
        return " and ".join(parts)


@dataclass(frozen=True)
class SloFacts:
    """What one poll saw. `lag_by_topic` None: the lag is unknown (Kafka did not answer, or
    no batch committed yet), which is not 0."""

    latest_committed: int | None
    lag_by_topic: dict[str, int] | None

    @property
    def lag_records(self) -> int | None:
        return None if self.lag_by_topic is None else sum(self.lag_by_topic.values())


def lag_by_topic(committed: TopicOffsets, end: TopicOffsets) -> dict[str, int]:
    """Records not yet read per topic, over the partitions the checkpoint has committed
    (where an uncommitted partition starts is up to `startingOffsets`, unknown here)."""
    return records_by_topic(committed, end)


@dataclass(frozen=True)
class SloAlert:
    """A breach or its all-clear, with the figures a person needs to act on it."""

    kind: AlertKind
    # breach: the objectives failing now; clear: those that failed during the breach.
    slos: tuple[str, ...]
    message: str
    lag_records: int | None
    lag_by_topic: dict[str, int] | None
    commit_age_s: float | None
    latest_committed: int | None
    max_lag_records: int | None
    max_commit_age_s: float | None
    # breach: which announcement of this breach (1 = the first); clear: how many were made.
    notification: int
    # How long the breach has lasted (breach) or lasted (clear), on the watch's clock.
    breach_s: float

    def to_dict(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["slos"] = list(self.slos)
        return values

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SloAlert:
        try:
            kind = data["kind"]
            if kind not in ALERT_KINDS:
                raise ValueError(f"kind {kind!r} is not one of {list(ALERT_KINDS)}")
            raw_lags = data["lag_by_topic"]
            return cls(
                kind=cast(AlertKind, kind),
                slos=tuple(str(s) for s in data["slos"]),
                message=str(data["message"]),
                lag_records=_optional_int(data["lag_records"]),
                lag_by_topic=None
                if raw_lags is None
                else {str(t): int(n) for t, n in dict(raw_lags).items()},
                commit_age_s=_optional_float(data["commit_age_s"]),
                latest_committed=_optional_int(data["latest_committed"]),
                max_lag_records=_optional_int(data["max_lag_records"]),
                max_commit_age_s=_optional_float(data["max_commit_age_s"]),
                notification=int(data["notification"]),
                breach_s=float(data["breach_s"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"SLO alert: malformed ({type(exc).__name__}: {exc})") from exc


# Times of `SloState`, serialized as ages before its `at_ms` (see `to_dict`).
_TIMES = (
    "commit_seen_ms",
    "waiting_since_ms",
    "pending_since_ms",
    "clearing_since_ms",
    "breached_at_ms",
    "notified_ms",
)


@dataclass(frozen=True)
class SloState:
    """What the paging rules remember between polls. Times are on the watching host's clock;
    `at_ms` is the poll that last updated it."""

    at_ms: int | None = None
    # The latest committed batch and when this watch first saw it.
    latest_committed: int | None = None
    commit_seen_ms: int | None = None
    # Since when records have been waiting (lag > 0) without a break this watch saw.
    waiting_since_ms: int | None = None
    # Not breached: since when the breach condition has held.
    pending_since_ms: int | None = None
    # Breached: since when every objective has been met.
    clearing_since_ms: int | None = None
    breached: bool = False
    breached_at_ms: int | None = None
    # The objectives that failed during the current breach (announced).
    breached_slos: tuple[str, ...] = ()
    notified_ms: int | None = None
    sent: int = 0  # announcements of the current breach
    breaches: int = 0  # breaches this watch has announced, in all
    # The last figures, for a summary: not used by the rules.
    lag_records: int | None = None
    commit_age_s: float | None = None

    def seconds_since_commit(self, now_ms: int) -> float | None:
        """Since this watch first saw the latest committed batch (None: no batch yet)."""
        if self.commit_seen_ms is None:
            return None
        return max(0, now_ms - self.commit_seen_ms) / 1000

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON, with every time as its age before `at_ms`, so that the watch can carry
        on from it on another host, on that host's clock (`from_dict`): the time between the
        two (an Airflow round trip) is not counted, rather than counted by comparing clocks."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _TIMES}
        values["breached_slos"] = list(self.breached_slos)
        at = self.at_ms
        values["ages_ms"] = {
            name.removesuffix("_ms"): None
            if getattr(self, name) is None or at is None
            else at - getattr(self, name)
            for name in _TIMES
        }
        del values["at_ms"]
        return values

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], now_ms: int) -> SloState:
        """The state `to_dict` wrote, carried on at `now_ms` of this host's clock."""
        try:
            ages = dict(data["ages_ms"])
            times = {
                name: None
                if ages.get(name.removesuffix("_ms")) is None
                # A negative age would come from a hand-edited state; never in the future.
                else now_ms - max(0, int(ages[name.removesuffix("_ms")]))
                for name in _TIMES
            }
            breached = data["breached"]
            if not isinstance(breached, bool):
                raise TypeError("breached is not a bool")
            return cls(
                at_ms=now_ms,
                latest_committed=_optional_int(data["latest_committed"]),
                breached=breached,
                breached_slos=tuple(str(s) for s in data["breached_slos"]),
                sent=int(data["sent"]),
                breaches=int(data["breaches"]),
                lag_records=_optional_int(data.get("lag_records")),
                commit_age_s=_optional_float(data.get("commit_age_s")),
                **times,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"SLO state: malformed ({type(exc).__name__}: {exc})") from exc


@dataclass(frozen=True)
class SloVerdict:
    """The objectives judged at one poll: True failing, False met, None unknown."""

    verdicts: dict[str, bool | None] = field(default_factory=dict)
    commit_age_ms: int | None = None

    @property
    def failing(self) -> tuple[str, ...]:
        return tuple(name for name, failed in self.verdicts.items() if failed)

    @property
    def all_met(self) -> bool:
        return all(failed is False for failed in self.verdicts.values())

    @property
    def unknown(self) -> tuple[str, ...]:
        return tuple(name for name, failed in self.verdicts.items() if failed is None)


def evaluate_slo(
    settings: SloSettings, state: SloState, facts: SloFacts, now_ms: int
) -> tuple[SloState, SloAlert | None]:
    """The state after one poll, and the announcement it calls for, if any."""
    state = _track_commits(state, facts, now_ms)
    verdict = judge(settings, state, facts, now_ms)
    state = replace(
        state,
        lag_records=facts.lag_records,
        commit_age_s=None if verdict.commit_age_ms is None else verdict.commit_age_ms / 1000,
    )
    if not state.breached:
        return _while_met(settings, state, facts, verdict, now_ms)
    return _while_breached(settings, state, facts, verdict, now_ms)


def judge(settings: SloSettings, state: SloState, facts: SloFacts, now_ms: int) -> SloVerdict:
    """Each objective's verdict from one poll's facts and the commits tracked so far."""
    lag = facts.lag_records
    age_ms: int | None = None
    if lag is not None and state.commit_seen_ms is not None:
        waiting = max(state.commit_seen_ms, state.waiting_since_ms or state.commit_seen_ms)
        age_ms = 0 if lag == 0 else max(0, now_ms - waiting)
    verdicts: dict[str, bool | None] = {}
    if settings.max_lag_records is not None:
        verdicts[LAG] = None if lag is None else lag > settings.max_lag_records
    if settings.max_commit_age_s is not None:
        verdicts[COMMIT_AGE] = None if age_ms is None else age_ms > settings.max_commit_age_s * 1000
    return SloVerdict(verdicts, age_ms)


def _track_commits(state: SloState, facts: SloFacts, now_ms: int) -> SloState:
    seen = state.commit_seen_ms
    if facts.latest_committed is None:
        seen = None
    elif facts.latest_committed != state.latest_committed or seen is None:
        seen = now_ms  # a new batch (or a rewound one): this watch sees it now
    waiting = state.waiting_since_ms
    lag = facts.lag_records
    if lag is not None:  # an unknown lag neither starts nor ends a wait
        waiting = (waiting if waiting is not None else now_ms) if lag > 0 else None
    return replace(
        state,
        at_ms=now_ms,
        latest_committed=facts.latest_committed,
        commit_seen_ms=seen,
        waiting_since_ms=waiting,
    )


def _while_met(
    settings: SloSettings, state: SloState, facts: SloFacts, verdict: SloVerdict, now_ms: int
) -> tuple[SloState, SloAlert | None]:
    failing = verdict.failing
    if not failing:
        # Met: the pending breach is over. Unknown: it stays pending, neither confirmed nor
        # interrupted.
        pending = None if verdict.all_met else state.pending_since_ms
        return replace(state, pending_since_ms=pending), None
    pending = state.pending_since_ms if state.pending_since_ms is not None else now_ms
    if now_ms - pending < settings.breach_after_s * 1000:
        return replace(state, pending_since_ms=pending), None
    state = replace(
        state,
        breached=True,
        breached_at_ms=pending,
        pending_since_ms=None,
        clearing_since_ms=None,
        breached_slos=failing,
        notified_ms=now_ms,
        sent=1,
        breaches=state.breaches + 1,
    )
    return state, _alert("breach", failing, settings, state, facts, verdict, now_ms)


def _while_breached(
    settings: SloSettings, state: SloState, facts: SloFacts, verdict: SloVerdict, now_ms: int
) -> tuple[SloState, SloAlert | None]:
    if verdict.all_met:
        clearing = state.clearing_since_ms if state.clearing_since_ms is not None else now_ms
        if now_ms - clearing < settings.clear_after_s * 1000:
            return replace(state, clearing_since_ms=clearing), None
        alert = _alert("clear", state.breached_slos, settings, state, facts, verdict, now_ms)
        return (
            replace(
                state,
                breached=False,
                breached_at_ms=None,
                clearing_since_ms=None,
                pending_since_ms=None,
                breached_slos=(),
                notified_ms=None,
                sent=0,
            ),
            alert,
        )
    failing = verdict.failing
    # Failing or unknown: any clearing starts again.
    state = replace(state, clearing_since_ms=None)
    if not failing:
        return state, None
    new = tuple(name for name in failing if name not in state.breached_slos)
    interval = settings.renotify_interval_ms(state.sent)
    due = (
        interval is not None
        and state.notified_ms is not None
        and now_ms - state.notified_ms >= interval
    )
    if not new and not due:
        return state, None
    state = replace(
        state,
        breached_slos=state.breached_slos + new,
        notified_ms=now_ms,
        sent=state.sent + 1,
    )
    return state, _alert("breach", failing, settings, state, facts, verdict, now_ms)


def _alert(
    kind: AlertKind,
    slos: tuple[str, ...],
    settings: SloSettings,
    state: SloState,
    facts: SloFacts,
    verdict: SloVerdict,
    now_ms: int,
) -> SloAlert:
    breach_s = 0.0 if state.breached_at_ms is None else (now_ms - state.breached_at_ms) / 1000
    age_s = None if verdict.commit_age_ms is None else verdict.commit_age_ms / 1000
    alert = SloAlert(
        kind=kind,
        slos=slos,
        message="",
        lag_records=facts.lag_records,
        lag_by_topic=None if facts.lag_by_topic is None else dict(facts.lag_by_topic),
        commit_age_s=age_s,
        latest_committed=facts.latest_committed,
        max_lag_records=settings.max_lag_records,
        max_commit_age_s=settings.max_commit_age_s,
        notification=state.sent,
        breach_s=breach_s,
    )
    return replace(alert, message=describe_alert(alert))


def describe_alert(alert: SloAlert) -> str:
    """One line a person can act on: what failed, by how much, for how long."""
    figures = []
    if alert.lag_records is None:
        figures.append("lag unknown")
    else:
        topics = ", ".join(f"{t} {n:,}" for t, n in (alert.lag_by_topic or {}).items())
        limit = "" if alert.max_lag_records is None else f" (SLO <= {alert.max_lag_records:,})"
        figures.append(
            f"lag {alert.lag_records:,} records{limit}" + (f": {topics}" if topics else "")
        )
    if alert.commit_age_s is not None:
        limit = "" if alert.max_commit_age_s is None else f" (SLO <= {alert.max_commit_age_s:g} s)"
        figures.append(f"commit age {alert.commit_age_s:.0f} s{limit}")
    figures.append(f"latest committed batch {alert.latest_committed}")
    slos = ", ".join(alert.slos)
    if alert.kind == "clear":
        head = f"SLO cleared ({slos}) after {alert.breach_s:.0f} s in breach"
    elif alert.notification == 1:
        head = f"SLO breach: {slos}"
    else:
        head = (
            f"SLO breach goes on: {slos}, {alert.breach_s:.0f} s so far "
            f"(announcement {alert.notification})"
        )
    return f"{head}; " + "; ".join(figures)


def _non_negative(value: object, name: str) -> float:
    if value == 0 and not isinstance(value, bool):
        return 0.0
    return positive_number(value, name)


def _optional_int(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"expected an int, got {type(value).__name__}")
    return int(value)


def _optional_float(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    return float(value)
