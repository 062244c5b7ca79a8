"""Health of a streaming query over a window of observations, after LinkedIn Burrow's rules.

An observation pairs what the checkpoint says (latest planned and committed batch ids, the
committed batch's offsets) with Kafka's end offsets at one moment. Over the observations of
the last `window_ms`, precedence REWOUND > UNKNOWN > STOPPED > STALLED > LAGGING > OK:

- REWOUND: a partition's committed offset, or the latest committed batch id, went backwards
  between consecutive observations (a checkpoint restored or rewritten under a live watcher).
  Decided from any two observations: it is evidence, not a trend.
- UNKNOWN: no observation; fewer than `min_observations`; observations spanning less than
  `min_coverage` of the window (a short span cannot tell "stopped" from "slow trigger"); or
  no batch committed yet (lag is measured from committed offsets, so it is unknowable).
- STOPPED: data waiting (lag > 0 at both ends of the window), no batch planned or committed
  within the window and none in flight. An idle stream (no lag) is OK: Spark plans no batch
  when there is no new data.
- STALLED: data waiting and no batch committed within the window although a batch is in
  flight (planned > committed) or new batches were planned. Also a first batch that is
  planned but never committed over the window.
- LAGGING: lag (records, summed over committed partitions) non-decreasing at every step,
  strictly larger at the end, never zero (Burrow: a zero lag in the window means the
  consumer caught up), and above `min_lag_records`.
- OK otherwise.

Lag counts only partitions present in the committed offsets: where a partition the query
has not committed yet starts depends on `startingOffsets` and retention, unknown here.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_kafkaspark.core.kafka.offsets import (
    TopicOffsets,
    format_kafka_offsets,
    parse_kafka_offsets,
    total_records,
)
from airflow_provider_kafkaspark.errors import InvalidInputError

FigureValue = int | float | str | bool | None

# Rewinds named in a report's reason; the rest are only counted.
_REWINDS_NAMED = 3


class HealthStatus(enum.Enum):
    OK = "OK"
    LAGGING = "LAGGING"
    STALLED = "STALLED"
    STOPPED = "STOPPED"
    REWOUND = "REWOUND"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class HealthPolicy:
    # Two points make no trend; Burrow likewise waits for a full window of commits.
    min_observations: int = 3
    # Fraction of the window the observations must span before absence of progress counts.
    min_coverage: float = 0.5
    # LAGGING only when the final lag is strictly above this many records.
    min_lag_records: int = 0

    def __post_init__(self) -> None:
        if self.min_observations < 2:
            raise InvalidInputError(
                f"HealthPolicy.min_observations must be >= 2, got {self.min_observations}"
            )
        if not 0.0 <= self.min_coverage <= 1.0:
            raise InvalidInputError(
                f"HealthPolicy.min_coverage must be within [0, 1], got {self.min_coverage}"
            )
        if self.min_lag_records < 0:
            raise InvalidInputError(
                f"HealthPolicy.min_lag_records must be >= 0, got {self.min_lag_records}"
            )


@dataclass(frozen=True)
class Observation:
    at_ms: int
    latest_planned: int | None
    latest_committed: int | None
    committed_offsets: TopicOffsets = field(default_factory=dict)
    # Kafka's end offsets for the committed partitions and any new ones.
    end_offsets: TopicOffsets = field(default_factory=dict)

    @property
    def lag_records(self) -> int:
        return total_records(self.committed_offsets, self.end_offsets)

    def to_dict(self) -> dict[str, Any]:
        # Offsets in Spark's own JSON form, so a sensor can keep its history in XCom.
        return {
            "at_ms": self.at_ms,
            "latest_planned": self.latest_planned,
            "latest_committed": self.latest_committed,
            "committed_offsets": format_kafka_offsets(self.committed_offsets),
            "end_offsets": format_kafka_offsets(self.end_offsets),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Observation:
        try:
            planned, committed = data["latest_planned"], data["latest_committed"]
            return cls(
                at_ms=int(data["at_ms"]),
                latest_planned=None if planned is None else int(planned),
                latest_committed=None if committed is None else int(committed),
                committed_offsets=parse_kafka_offsets(
                    data["committed_offsets"], where="observation committed_offsets"
                ),
                end_offsets=parse_kafka_offsets(
                    data["end_offsets"], where="observation end_offsets"
                ),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"observation: malformed ({type(exc).__name__}: {exc})"
            ) from exc


@dataclass(frozen=True)
class HealthReport:
    status: HealthStatus
    reason: str
    figures: dict[str, FigureValue]

    @property
    def healthy(self) -> bool:
        """Only OK: LAGGING falls further behind, UNKNOWN proves nothing."""
        return self.status is HealthStatus.OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "healthy": self.healthy,
            "reason": self.reason,
            "figures": dict(self.figures),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HealthReport:
        try:
            raw = data["figures"]
            if not isinstance(raw, Mapping):
                raise TypeError(f"figures is {type(raw).__name__}, not an object")
            figures: dict[str, FigureValue] = {}
            for key, value in raw.items():
                if value is not None and not isinstance(value, int | float | str | bool):
                    raise TypeError(f"figure {key!r} is {type(value).__name__}")
                figures[str(key)] = value
            return cls(HealthStatus(data["status"]), str(data["reason"]), figures)
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"health report: malformed ({type(exc).__name__}: {exc})"
            ) from exc


def evaluate_health(
    observations: Sequence[Observation],
    *,
    window_ms: int,
    policy: HealthPolicy | None = None,
) -> HealthReport:
    """Judge the query from the observations within `window_ms` of the newest one."""
    if window_ms <= 0:
        raise InvalidInputError(f"health window_ms must be > 0, got {window_ms}")
    policy = policy or HealthPolicy()
    if not observations:
        return HealthReport(
            HealthStatus.UNKNOWN, "no observations yet", _figures(window_ms, [], [])
        )
    # Sorted defensively: observations may be gathered from retried, out-of-order pokes.
    ordered = sorted(observations, key=lambda o: o.at_ms)
    newest = ordered[-1]
    window = [o for o in ordered if o.at_ms >= newest.at_ms - window_ms]
    lags = [o.lag_records for o in window]
    figures = _figures(window_ms, window, lags)
    first, last = window[0], window[-1]
    span = last.at_ms - first.at_ms

    rewinds = _rewinds(window)
    if rewinds:
        named = "; ".join(rewinds[:_REWINDS_NAMED])
        more = f" (+{len(rewinds) - _REWINDS_NAMED} more)" if len(rewinds) > _REWINDS_NAMED else ""
        figures["rewinds"] = len(rewinds)
        return HealthReport(HealthStatus.REWOUND, f"moved backwards: {named}{more}", figures)

    if len(window) < policy.min_observations:
        return HealthReport(
            HealthStatus.UNKNOWN,
            f"{len(window)} observation(s) in the last {window_ms:,} ms; "
            f"need {policy.min_observations}",
            figures,
        )
    if span < policy.min_coverage * window_ms:
        return HealthReport(
            HealthStatus.UNKNOWN,
            f"observations span {span:,} ms, under {policy.min_coverage:.0%} "
            f"of the {window_ms:,} ms window",
            figures,
        )

    planned = _batch(last.latest_planned) - _batch(first.latest_planned)
    committed = _batch(last.latest_committed) - _batch(first.latest_committed)
    in_flight = _batch(last.latest_planned) > _batch(last.latest_committed)

    if last.latest_committed is None:
        if in_flight and first.latest_planned is not None:
            return HealthReport(
                HealthStatus.STALLED,
                f"batch {last.latest_planned} planned but no batch committed yet in {span:,} ms",
                figures,
            )
        return HealthReport(
            HealthStatus.UNKNOWN, "no batch committed yet: lag cannot be measured", figures
        )

    waiting = lags[0] > 0 and lags[-1] > 0
    if waiting and committed == 0 and planned == 0 and not in_flight:
        return HealthReport(
            HealthStatus.STOPPED,
            f"no batch planned in {span:,} ms while {lags[-1]:,} records wait "
            f"(last batch {last.latest_committed})",
            figures,
        )
    if waiting and committed == 0:
        stuck = (
            f"batch {last.latest_planned} planned but not committed"
            if in_flight
            else f"{planned} batches planned, none committed"
        )
        return HealthReport(
            HealthStatus.STALLED,
            f"{stuck} in {span:,} ms while {lags[-1]:,} records wait",
            figures,
        )
    if _growing(lags) and lags[-1] > policy.min_lag_records:
        return HealthReport(
            HealthStatus.LAGGING,
            f"lag grew from {lags[0]:,} to {lags[-1]:,} records over {span:,} ms "
            f"with {committed} batches committed",
            figures,
        )
    return HealthReport(
        HealthStatus.OK,
        f"{committed} batches committed in {span:,} ms, lag {lags[-1]:,} records",
        figures,
    )


def committed_batches_since(observations: Sequence[Observation], batch_id: int | None) -> int:
    """Batches committed after `batch_id` (None: nothing was committed yet), per the newest
    observation; 0 when nothing is known or the commits went backwards.
    """
    if not observations:
        return 0
    newest = max(observations, key=lambda o: o.at_ms)
    return max(0, _batch(newest.latest_committed) - _batch(batch_id))


def _batch(batch_id: int | None) -> int:
    # No batch yet sits just before batch 0, so None -> 0 counts as one batch.
    return -1 if batch_id is None else batch_id


def _growing(lags: Sequence[int]) -> bool:
    return (
        len(lags) >= 2
        and lags[0] > 0
        and all(b >= a for a, b in itertools.pairwise(lags))
        and lags[-1] > lags[0]
    )


def _rewinds(window: Sequence[Observation]) -> list[str]:
    found: list[str] = []
    for before, after in itertools.pairwise(window):
        if before.latest_committed is not None and _batch(after.latest_committed) < (
            before.latest_committed
        ):
            found.append(
                f"latest committed batch {before.latest_committed} -> {after.latest_committed} "
                f"at {after.at_ms}"
            )
        for topic, partitions in after.committed_offsets.items():
            earlier = before.committed_offsets.get(topic)
            if earlier is None:
                continue
            for partition, offset in partitions.items():
                was = earlier.get(partition)
                if was is not None and offset < was:
                    found.append(f"{topic}-{partition} offset {was} -> {offset} at {after.at_ms}")
    return found


def _figures(
    window_ms: int, window: Sequence[Observation], lags: Sequence[int]
) -> dict[str, FigureValue]:
    if not window:
        return {"window_ms": window_ms, "observations": 0}
    first, last = window[0], window[-1]
    # Without a committed batch the lag is not 0 but unknown.
    known = last.latest_committed is not None
    return {
        "window_ms": window_ms,
        "observations": len(window),
        "span_ms": last.at_ms - first.at_ms,
        "observed_at_ms": last.at_ms,
        "latest_planned": last.latest_planned,
        "latest_committed": last.latest_committed,
        "batches_planned_in_window": max(
            0, _batch(last.latest_planned) - _batch(first.latest_planned)
        ),
        "batches_committed_in_window": max(
            0, _batch(last.latest_committed) - _batch(first.latest_committed)
        ),
        "lag_first": lags[0] if known else None,
        "lag_last": lags[-1] if known else None,
        "lag_delta": lags[-1] - lags[0] if known else None,
        "lag_max": max(lags) if known else None,
    }
