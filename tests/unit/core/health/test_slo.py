"""The SLO paging rules (pure): when a breach is announced, repeated and cleared, what an
unknown lag does, what an idle topic is, and the state a watch carries across deferrals."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest

from airflow_provider_kafkaspark.core.health.slo import (
    SloAlert,
    SloFacts,
    SloSettings,
    SloState,
    evaluate_slo,
    lag_by_topic,
)
from airflow_provider_kafkaspark.errors import InvalidArgumentError, InvalidInputError
from tests.unit.airflow_helpers import T0

S = 1000  # ms


def lagging(records: int | None, batch: int | None = 7, topic: str = "events") -> SloFacts:
    return SloFacts(batch, None if records is None else {topic: records})


def run(
    settings: SloSettings,
    polls: Iterable[tuple[int, SloFacts]],
    state: SloState | None = None,
) -> tuple[SloState, list[tuple[int, SloAlert]]]:
    """Evaluate each (seconds after T0, facts); returns the last state and the alerts."""
    state = state or SloState()
    alerts: list[tuple[int, SloAlert]] = []
    for at_s, facts in polls:
        state, alert = evaluate_slo(settings, state, facts, T0 + at_s * S)
        if alert is not None:
            alerts.append((at_s, alert))
    return state, alerts


def lag_slo(**kwargs: Any) -> SloSettings:
    values: dict[str, Any] = {"max_lag_records": 1000, "clear_after_s": 0, "renotify_after_s": None}
    values.update(kwargs)
    return SloSettings.checked("t", **values)


def test_a_breach_is_announced_once_it_has_held_for_breach_after() -> None:
    settings = lag_slo(breach_after_s=20)
    polls = [(0, lagging(500)), (10, lagging(1500)), (20, lagging(1800)), (30, lagging(2500))]
    state, alerts = run(settings, polls)
    assert [at for at, _ in alerts] == [30]  # held from 10 s: announced at 30 s, not 20 s
    alert = alerts[0][1]
    assert alert.kind == "breach" and alert.slos == ("lag",) and alert.notification == 1
    assert alert.lag_records == 2500 and alert.lag_by_topic == {"events": 2500}
    assert alert.max_lag_records == 1000 and alert.breach_s == 20
    assert "lag 2,500 records (SLO <= 1,000): events 2,500" in alert.message
    assert state.breached and state.breaches == 1


def test_a_breach_that_does_not_hold_long_enough_is_not_announced() -> None:
    settings = lag_slo(breach_after_s=20)
    polls = [(0, lagging(1500)), (10, lagging(1500)), (15, lagging(10)), (25, lagging(1500))]
    state, alerts = run(settings, polls)
    assert alerts == [] and not state.breached
    assert state.pending_since_ms == T0 + 25 * S  # the stretch started again at 25 s


def test_breach_after_zero_announces_at_the_first_poll_past_the_slo() -> None:
    _, alerts = run(lag_slo(), [(0, lagging(1000)), (10, lagging(1001))])
    assert [(at, a.kind) for at, a in alerts] == [(10, "breach")]  # 1000 is within the SLO


def test_the_all_clear_comes_once_every_slo_held_for_clear_after() -> None:
    settings = lag_slo(clear_after_s=30)
    polls = [(0, lagging(5000)), (10, lagging(900)), (20, lagging(800)), (30, lagging(1200))]
    polls += [(40, lagging(700)), (60, lagging(600)), (70, lagging(0))]
    state, alerts = run(settings, polls)
    # Met at 10 s, broken at 30 s, met again from 40 s: cleared at 70 s.
    assert [(at, a.kind) for at, a in alerts] == [(0, "breach"), (70, "clear")]
    clear = alerts[1][1]
    assert clear.slos == ("lag",) and clear.breach_s == 70 and clear.notification == 1
    assert clear.message.startswith("SLO cleared (lag) after 70 s in breach")
    assert not state.breached and state.sent == 0 and state.breaches == 1


def test_repeats_back_off_doubling_up_to_the_cap() -> None:
    settings = lag_slo(renotify_after_s=60, renotify_max_s=300)
    polls = [(t, lagging(5000 + t)) for t in range(0, 1500, 10)]
    state, alerts = run(settings, polls)
    # 0, then +60, +120, +240, +300 (the cap), +300, ...
    assert [at for at, _ in alerts] == [0, 60, 180, 420, 720, 1020, 1320]
    assert [a.notification for _, a in alerts] == [1, 2, 3, 4, 5, 6, 7]
    assert alerts[1][1].message.startswith("SLO breach goes on: lag, 60 s so far")
    assert state.breaches == 1  # one breach, announced seven times


def test_renotify_none_announces_a_breach_once() -> None:
    polls = [(t, lagging(5000)) for t in range(0, 36_000, 30)]
    _, alerts = run(lag_slo(renotify_after_s=None), polls)
    assert len(alerts) == 1


def test_renotify_interval_caps_and_never_overflows() -> None:
    settings = lag_slo(renotify_after_s=10, renotify_max_s=100)
    assert [settings.renotify_interval_ms(n) for n in (1, 2, 3, 4, 5)] == [
        10_000,
        20_000,
        40_000,
        80_000,
        100_000,
    ]
    assert settings.renotify_interval_ms(10_000) == 100_000
    # A cap below the first interval does not shorten it.
    assert lag_slo(renotify_after_s=600, renotify_max_s=60).renotify_interval_ms(3) == 600_000


def test_an_unknown_lag_never_breaches() -> None:
    settings = SloSettings.checked("t", max_lag_records=10, max_commit_age_s=5)
    polls = [(t, lagging(None)) for t in range(0, 600, 10)]
    state, alerts = run(settings, polls)
    assert alerts == [] and not state.breached and state.pending_since_ms is None
    assert state.lag_records is None and state.commit_age_s is None


def test_no_batch_committed_is_unknown_not_zero() -> None:
    settings = SloSettings.checked("t", max_lag_records=10, max_commit_age_s=5)
    state, alerts = run(settings, [(t, SloFacts(None, None)) for t in range(0, 600, 10)])
    assert alerts == [] and state.commit_seen_ms is None and state.lag_records is None


def test_an_unknown_lag_never_clears_a_breach_and_restarts_the_clearing() -> None:
    settings = lag_slo(clear_after_s=60)
    polls = [(0, lagging(5000))] + [(t, lagging(None)) for t in range(10, 600, 10)]
    state, alerts = run(settings, polls)
    assert [a.kind for _, a in alerts] == ["breach"] and state.breached
    # Met at 600 s, unknown at 630 s, met from 640 s: cleared 60 s after 640, not after 600.
    polls = [(600, lagging(0)), (630, lagging(None)), (640, lagging(0)), (690, lagging(0))]
    polls += [(700, lagging(0))]
    state, alerts = run(settings, polls, state)
    assert [(at, a.kind) for at, a in alerts] == [(700, "clear")]


def test_an_unknown_lag_keeps_a_pending_breach_pending() -> None:
    settings = lag_slo(breach_after_s=30)
    polls = [(0, lagging(5000)), (10, lagging(None)), (20, lagging(None)), (30, lagging(5000))]
    _, alerts = run(settings, polls)
    assert [(at, a.kind) for at, a in alerts] == [(30, "breach")]


def test_an_idle_topic_is_never_a_commit_age_breach() -> None:
    settings = SloSettings.checked("t", max_commit_age_s=60, clear_after_s=0)
    # The same batch for an hour with nothing waiting.
    state, alerts = run(settings, [(t, lagging(0, batch=7)) for t in range(0, 3600, 30)])
    assert alerts == [] and state.commit_age_s == 0
    assert state.seconds_since_commit(T0 + 3600 * S) == 3600  # the plain gauge still grows
    # Records arrive after the quiet hour: their wait starts now, not an hour ago.
    state, alerts = run(
        settings, [(3600, lagging(50, batch=7)), (3630, lagging(80, batch=7))], state
    )
    assert alerts == [] and state.commit_age_s == 30
    state, alerts = run(settings, [(3661, lagging(90, batch=7))], state)
    assert [a.kind for _, a in alerts] == ["breach"]
    alert = alerts[0][1]
    assert alert.slos == ("commit_age",) and alert.commit_age_s == 61
    assert "commit age 61 s (SLO <= 60 s)" in alert.message


def test_commit_age_restarts_at_each_batch_the_watch_sees() -> None:
    settings = SloSettings.checked("t", max_commit_age_s=25, clear_after_s=0)
    # Records always waiting, a new batch every 20 s: never 25 s without a commit.
    polls = [(t, lagging(500, batch=t // 20)) for t in range(0, 300, 10)]
    state, alerts = run(settings, polls)
    assert alerts == [] and state.commit_age_s is not None and state.commit_age_s <= 20
    # Batch 14 (first seen at 280 s) is the last for a while: a breach once records have
    # waited 30 s past it, and a new batch clears it.
    polls = [(300, lagging(500, batch=14)), (310, lagging(600, batch=14))]
    polls += [(320, lagging(300, batch=15))]
    state, alerts = run(settings, polls, state)
    assert [(at, a.kind) for at, a in alerts] == [(310, "breach"), (320, "clear")]
    assert alerts[0][1].commit_age_s == 30 and alerts[0][1].latest_committed == 14


def test_a_second_slo_failing_during_a_breach_is_announced_at_once() -> None:
    settings = SloSettings.checked(
        "t", max_lag_records=100, max_commit_age_s=30, clear_after_s=0, renotify_after_s=3600
    )
    polls = [(0, lagging(500, batch=1)), (10, lagging(600, batch=2)), (20, lagging(700, batch=2))]
    polls += [(45, lagging(800, batch=2)), (60, lagging(900, batch=2))]
    state, alerts = run(settings, polls)
    assert [(at, a.slos) for at, a in alerts] == [(0, ("lag",)), (45, ("lag", "commit_age"))]
    assert state.breached_slos == ("lag", "commit_age") and state.sent == 2


def test_state_round_trips_as_ages_and_carries_on_on_another_clock() -> None:
    settings = lag_slo(renotify_after_s=60, clear_after_s=30)
    state, _ = run(settings, [(0, lagging(5000)), (20, lagging(5000)), (30, lagging(10))])
    data = json.loads(json.dumps(state.to_dict()))
    assert "at_ms" not in data and data["ages_ms"]["notified"] == 30 * S
    assert SloState.from_dict(data, state.at_ms or 0) == state
    # Resumed on a host whose clock reads 5 days later: the same ages, the same decisions.
    later = T0 + 5 * 86_400 * S
    moved = SloState.from_dict(data, later)
    assert moved.notified_ms == later - 30 * S and moved.clearing_since_ms == later
    assert moved.breached and moved.sent == 1 and moved.latest_committed == 7
    again, alert = evaluate_slo(settings, moved, lagging(10), later + 30 * S)
    assert alert is not None and alert.kind == "clear" and not again.breached


def test_a_malformed_state_is_refused() -> None:
    good = SloState().to_dict()
    for broken in ({}, {**good, "breached": "yes"}, {**good, "ages_ms": None}):
        with pytest.raises(InvalidInputError, match="SLO state: malformed"):
            SloState.from_dict(broken, T0)


def test_an_alert_round_trips() -> None:
    _, alerts = run(lag_slo(), [(0, lagging(5000))])
    alert = alerts[0][1]
    data = json.loads(json.dumps(alert.to_dict()))
    assert SloAlert.from_dict(data) == alert
    with pytest.raises(InvalidInputError, match="SLO alert: malformed"):
        SloAlert.from_dict({**data, "kind": "panic"})


def test_settings_are_checked_and_round_trip() -> None:
    settings = SloSettings.checked("w", max_lag_records=10, max_commit_age_s=5)
    assert SloSettings.from_dict(json.loads(json.dumps(settings.to_dict()))) == settings
    assert settings.describe() == "lag <= 10 records and commit age <= 5 s"
    with pytest.raises(InvalidArgumentError, match="w: give max_lag_records, max_commit_age_s"):
        SloSettings.checked("w")
    with pytest.raises(InvalidArgumentError, match="w: max_lag_records must be an int >= 0"):
        SloSettings.checked("w", max_lag_records=True)
    with pytest.raises(InvalidArgumentError, match="w: max_commit_age_s"):
        SloSettings.checked("w", max_commit_age_s=0)
    with pytest.raises(InvalidArgumentError, match="w: breach_after_s"):
        SloSettings.checked("w", max_lag_records=1, breach_after_s=-1)
    with pytest.raises(InvalidArgumentError, match="unknown SLO settings"):
        SloSettings.checked("w", max_lag_records=1, page_everyone=True)


def test_lag_by_topic_counts_committed_partitions_only() -> None:
    committed = {"a": {0: 10, 1: 20}, "b": {0: 5}}
    end = {"a": {0: 15, 1: 20, 2: 999}, "b": {0: 3}}  # a-2 not committed; b behind its commit
    assert lag_by_topic(committed, end) == {"a": 5, "b": 0}
