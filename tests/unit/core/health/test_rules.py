"""Burrow-style health of a streaming query over a window of observations (pure logic)."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kafkaspark.core.health.rules import (
    HealthPolicy,
    HealthReport,
    HealthStatus,
    Observation,
    committed_batches_since,
    evaluate_health,
)
from airflow_provider_kafkaspark.errors import InvalidInputError

WINDOW = 60_000
STEP = 20_000


def obs(
    at_s: int, planned: int | None, committed: int | None, offset: int, lag: int
) -> Observation:
    """One partition committed at `offset` with `lag` records after it."""
    return Observation(
        at_ms=at_s * 1000,
        latest_planned=planned,
        latest_committed=committed,
        committed_offsets={"t": {0: offset}},
        end_offsets={"t": {0: offset + lag}},
    )


def series(*rows: tuple[int | None, int | None, int, int]) -> list[Observation]:
    """Observations every 20 s: (planned, committed, offset, lag)."""
    return [obs(i * STEP // 1000, *row) for i, row in enumerate(rows)]


def health(
    observations: list[Observation], *, min_coverage: float = 0.5, min_lag_records: int = 0
) -> HealthReport:
    policy = HealthPolicy(min_coverage=min_coverage, min_lag_records=min_lag_records)
    return evaluate_health(observations, window_ms=WINDOW, policy=policy)


def test_progressing_query_is_ok() -> None:
    report = health(series((3, 3, 100, 5), (4, 4, 110, 7), (5, 5, 120, 2), (6, 6, 130, 4)))
    assert report.status is HealthStatus.OK
    assert report.healthy
    assert report.figures["batches_committed_in_window"] == 3
    assert report.figures["batches_planned_in_window"] == 3
    assert report.figures["lag_first"] == 5
    assert report.figures["lag_last"] == 4
    assert report.figures["lag_delta"] == -1
    assert report.figures["observations"] == 4
    assert report.figures["span_ms"] == 60_000
    assert "3 batches committed" in report.reason


def test_idle_stream_without_lag_is_ok() -> None:
    report = health(series((7, 7, 500, 0), (7, 7, 500, 0), (7, 7, 500, 0), (7, 7, 500, 0)))
    assert report.status is HealthStatus.OK
    assert report.figures["batches_planned_in_window"] == 0


def test_stopped_when_data_waits_and_nothing_is_planned() -> None:
    report = health(series((7, 7, 500, 10), (7, 7, 500, 15), (7, 7, 500, 15), (7, 7, 500, 40)))
    assert report.status is HealthStatus.STOPPED
    assert not report.healthy
    assert "no batch planned in 60,000 ms while 40 records wait" in report.reason
    # Growing lag would also be LAGGING; STOPPED takes precedence.
    assert report.figures["lag_delta"] == 30


def test_data_arriving_mid_window_is_not_stopped_yet() -> None:
    report = health(series((7, 7, 500, 0), (7, 7, 500, 0), (7, 7, 500, 3), (7, 7, 500, 9)))
    assert report.status is HealthStatus.OK


def test_stalled_when_a_batch_is_in_flight_and_never_commits() -> None:
    report = health(series((8, 7, 500, 50), (8, 7, 500, 60), (8, 7, 500, 70), (8, 7, 500, 80)))
    assert report.status is HealthStatus.STALLED
    assert report.reason.startswith("batch 8 planned but not committed in 60,000 ms")


def test_stalled_when_batches_are_planned_but_none_committed() -> None:
    report = health(series((8, 7, 500, 50), (9, 7, 500, 50), (10, 7, 500, 50), (10, 7, 500, 55)))
    assert report.status is HealthStatus.STALLED
    assert report.figures["batches_planned_in_window"] == 2
    assert report.figures["batches_committed_in_window"] == 0


def test_first_batch_planned_but_never_committed_is_stalled() -> None:
    rows = [Observation(at_ms=i * STEP, latest_planned=0, latest_committed=None) for i in range(4)]
    report = health(rows)
    assert report.status is HealthStatus.STALLED
    assert "no batch committed yet" in report.reason
    # Lag is unknown without a committed batch, not zero.
    assert report.figures["lag_last"] is None


def test_no_batch_yet_is_unknown() -> None:
    rows = [
        Observation(at_ms=i * STEP, latest_planned=None, latest_committed=None) for i in range(4)
    ]
    report = health(rows)
    assert report.status is HealthStatus.UNKNOWN
    assert "no batch committed yet" in report.reason
    assert not report.healthy


def test_lagging_when_lag_grows_at_every_step() -> None:
    report = health(series((3, 3, 100, 10), (4, 4, 110, 20), (5, 5, 120, 20), (6, 6, 130, 35)))
    assert report.status is HealthStatus.LAGGING
    assert not report.healthy
    assert "lag grew from 10 to 35 records" in report.reason
    assert report.figures["lag_delta"] == 25


def test_lag_that_dips_once_is_not_lagging() -> None:
    report = health(series((3, 3, 100, 10), (4, 4, 110, 30), (5, 5, 120, 20), (6, 6, 130, 40)))
    assert report.status is HealthStatus.OK


def test_lag_starting_from_zero_is_not_lagging() -> None:
    # Burrow: a zero lag in the window means the consumer caught up within it.
    report = health(series((3, 3, 100, 0), (4, 4, 110, 20), (5, 5, 120, 30), (6, 6, 130, 40)))
    assert report.status is HealthStatus.OK


def test_flat_lag_is_not_lagging() -> None:
    report = health(series((3, 3, 100, 10), (4, 4, 110, 10), (5, 5, 120, 10), (6, 6, 130, 10)))
    assert report.status is HealthStatus.OK


def test_lagging_respects_minimum_lag() -> None:
    rows = series((3, 3, 100, 10), (4, 4, 110, 20), (5, 5, 120, 30), (6, 6, 130, 40))
    assert health(rows, min_lag_records=40).status is HealthStatus.OK
    assert health(rows, min_lag_records=39).status is HealthStatus.LAGGING


def test_rewound_offsets() -> None:
    report = health(series((3, 3, 100, 5), (4, 4, 110, 5), (5, 5, 90, 5), (6, 6, 100, 5)))
    assert report.status is HealthStatus.REWOUND
    assert "t-0 offset 110 -> 90 at 40000" in report.reason
    assert report.figures["rewinds"] == 1


def test_rewound_batch_id_beats_every_other_status() -> None:
    # Nothing planned and data waiting (STOPPED) but the commit log went back: REWOUND.
    report = health(series((9, 9, 500, 10), (9, 9, 500, 10), (9, 5, 500, 10), (9, 5, 500, 10)))
    assert report.status is HealthStatus.REWOUND
    assert "latest committed batch 9 -> 5" in report.reason


def test_rewind_needs_only_two_observations() -> None:
    report = health(series((4, 4, 110, 5), (5, 5, 100, 5)))
    assert report.status is HealthStatus.REWOUND


def test_committed_batch_disappearing_is_a_rewind() -> None:
    rows = [obs(0, 4, 4, 10, 0), obs(20, None, None, 10, 0)]
    assert health(rows).status is HealthStatus.REWOUND


def test_many_rewinds_are_counted_not_all_named() -> None:
    before = Observation(
        0, 1, 1, {"t": {p: 100 for p in range(5)}}, {"t": {p: 100 for p in range(5)}}
    )
    after = Observation(
        STEP, 1, 1, {"t": {p: 50 for p in range(5)}}, {"t": {p: 100 for p in range(5)}}
    )
    report = health([before, after])
    assert report.status is HealthStatus.REWOUND
    assert report.figures["rewinds"] == 5
    assert report.reason.endswith("(+2 more)")


def test_no_observations_is_unknown() -> None:
    report = evaluate_health([], window_ms=WINDOW)
    assert report.status is HealthStatus.UNKNOWN
    assert report.figures == {"window_ms": WINDOW, "observations": 0}


def test_single_observation_is_unknown() -> None:
    report = health([obs(0, 7, 7, 500, 1_000)])
    assert report.status is HealthStatus.UNKNOWN
    assert report.reason == "1 observation(s) in the last 60,000 ms; need 3"
    assert report.figures["lag_last"] == 1_000


def test_too_short_a_span_is_unknown() -> None:
    # Three observations 5 s apart cannot tell a stopped query from a slow trigger.
    rows = [obs(s, 7, 7, 500, 10) for s in (0, 5, 10)]
    report = health(rows)
    assert report.status is HealthStatus.UNKNOWN
    assert "span 10,000 ms" in report.reason
    assert health(rows, min_coverage=0.1).status is HealthStatus.STOPPED


def test_only_observations_inside_the_window_count() -> None:
    # The rewind at 20 s and the old batches fall outside the 60 s window ending at 120 s.
    rows = series(
        (3, 3, 100, 5),
        (4, 4, 90, 5),
        (5, 5, 95, 5),
        (6, 6, 100, 5),
        (7, 7, 105, 5),
        (8, 8, 110, 5),
        (9, 9, 115, 5),
    )
    report = health(rows)
    assert report.status is HealthStatus.OK
    assert report.figures["observations"] == 4
    assert report.figures["batches_committed_in_window"] == 3


def test_observations_are_sorted_by_time() -> None:
    rows = series((3, 3, 100, 10), (4, 4, 110, 20), (5, 5, 120, 20), (6, 6, 130, 35))
    assert health(list(reversed(rows))).status is HealthStatus.LAGGING


def test_lag_counts_only_committed_partitions() -> None:
    o = Observation(0, 1, 1, {"t": {0: 10}}, {"t": {0: 15, 1: 1_000}, "u": {0: 7}})
    assert o.lag_records == 5


def test_report_json_round_trip() -> None:
    report = health(series((8, 7, 500, 50), (8, 7, 500, 60), (8, 7, 500, 70), (8, 7, 500, 80)))
    data = json.loads(json.dumps(report.to_dict()))
    assert data["status"] == "STALLED"
    assert data["healthy"] is False
    assert HealthReport.from_dict(data) == report


def test_report_from_dict_rejects_malformed_input() -> None:
    with pytest.raises(InvalidInputError, match="health report: malformed"):
        HealthReport.from_dict({"status": "FINE", "reason": "", "figures": {}})
    with pytest.raises(InvalidInputError, match="figure 'x' is dict"):
        HealthReport.from_dict({"status": "OK", "reason": "", "figures": {"x": {}}})


def test_observation_json_round_trip() -> None:
    o = Observation(5, 3, None, {"t": {0: 1, 1: 2}}, {"t": {0: 4, 1: 2, 2: 9}})
    back = Observation.from_dict(json.loads(json.dumps(o.to_dict())))
    assert back == o
    with pytest.raises(InvalidInputError, match="observation"):
        Observation.from_dict({"at_ms": 1})


def test_committed_batches_since() -> None:
    rows = series((3, 3, 100, 5), (5, 5, 120, 5), (4, 4, 110, 5))
    # The newest observation (batch 4) decides, not the largest batch id seen.
    assert committed_batches_since(rows, 1) == 3
    assert committed_batches_since(rows, None) == 5
    assert committed_batches_since(rows, 9) == 0
    assert committed_batches_since([], 1) == 0
    assert committed_batches_since([Observation(0, 0, None)], None) == 0


def test_bad_window_and_policy_are_rejected() -> None:
    with pytest.raises(InvalidInputError, match="window_ms must be > 0"):
        evaluate_health([], window_ms=0)
    with pytest.raises(InvalidInputError, match="min_observations"):
        HealthPolicy(min_observations=1)
    with pytest.raises(InvalidInputError, match="min_coverage"):
        HealthPolicy(min_coverage=1.5)
    with pytest.raises(InvalidInputError, match="min_lag_records"):
        HealthPolicy(min_lag_records=-1)
