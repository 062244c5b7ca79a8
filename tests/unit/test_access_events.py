"""The example's event generator is reproducible and shaped like access logs."""

from __future__ import annotations

import json
from collections import Counter

from airflow_provider_kafkaspark.examples.access_events import generate_events


def test_same_seed_same_events_other_seed_other_events() -> None:
    a = list(generate_events(500, seed=1))
    b = list(generate_events(500, seed=1))
    c = list(generate_events(500, seed=2))
    assert a == b
    assert a != c


def test_event_time_advances_at_the_rate_and_json_round_trips() -> None:
    events = list(generate_events(1000, start_ms=0, events_per_second=100))
    assert events[0].event_time_ms < 100
    assert 9_900 <= events[-1].event_time_ms <= 10_050
    decoded = json.loads(events[3].to_json())
    assert decoded == {
        "ip": events[3].ip,
        "ts": events[3].event_time_ms,
        "path": events[3].path,
        "status": events[3].status,
    }


def test_heavy_hitters_exist() -> None:
    counts = Counter(e.ip for e in generate_events(5000, distinct_ips=20))
    top, bottom = counts.most_common()[0][1], counts.most_common()[-1][1]
    assert len(counts) == 20
    assert top > 5 * bottom


def test_sink_windows_counts_repeated_windows_as_duplicates() -> None:
    from airflow_provider_kafkaspark.examples.ip_count import sink_windows

    rows: list[str | bytes] = [
        '{"window_start_ms": 0, "ip": "a", "count": 2}',
        b'{"window_start_ms": 5000, "ip": "a", "count": 1}',
        '{"window_start_ms": 0, "ip": "a", "count": 2}',
    ]
    assert sink_windows(rows) == ({(0, "a"): 2, (5000, "a"): 1}, 1)
