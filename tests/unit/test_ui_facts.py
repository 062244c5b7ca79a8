"""The UI tier's decisions (tests/ui/facts.py): when produced records stay unread long enough
to be read as lag, and the figures read off the page and the CLI's JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ui.facts import (
    cell_number,
    latest_committed_batch,
    quiet_start,
    screenshot_targets,
    topic_lag,
)


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (6000.0, 6000.0),  # a trigger just passed: 60 s ahead
        (6015.0, 6015.0),  # 45 s ahead, 40 needed
        (6020.0, 6020.0),  # exactly 40 s ahead
        (6021.0, 6062.0),  # 39 s ahead: after the next trigger, plus the margin
        (6059.9, 6062.0),
    ],
)
def test_records_are_produced_only_when_the_next_trigger_is_far_enough(
    now: float, expected: float
) -> None:
    assert quiet_start(now, 60.0, 40.0) == pytest.approx(expected)


def test_a_window_longer_than_the_interval_cannot_be_had() -> None:
    with pytest.raises(ValueError, match="needed_s"):
        quiet_start(0.0, 60.0, 59.0)


def test_docs_get_a_copy_only_when_updating(tmp_path: Path) -> None:
    art, docs = tmp_path / "a", tmp_path / "d"
    assert screenshot_targets("jobs", art, docs, update=False) == [art / "jobs.png"]
    assert screenshot_targets("jobs", art, docs, update=True) == [
        art / "jobs.png",
        docs / "jobs.png",
    ]
    with pytest.raises(ValueError, match="lower-case"):
        screenshot_targets("../jobs", art, docs, update=True)


def test_counts_as_the_page_shows_them() -> None:
    assert cell_number(" 1,250 ") == 1250
    assert cell_number("0") == 0
    assert cell_number("unknown") is None
    with pytest.raises(ValueError, match="not a count"):
        cell_number("12 records")


def test_a_topics_lag_sums_its_partitions_and_refuses_a_cut_list() -> None:
    top = [
        {"topic": "a", "partition": 0, "lag_records": 120},
        {"topic": "a", "partition": 1, "lag_records": 130},
        {"topic": "b", "partition": 0, "lag_records": 7},
    ]
    assert topic_lag({"lag": {"top": top, "truncated": 0}}, "a") == 250
    assert topic_lag({"lag": {"top": top, "truncated": 0}}, "c") == 0
    with pytest.raises(ValueError, match="top 3"):
        topic_lag({"lag": {"top": top, "truncated": 2}}, "a")
    assert latest_committed_batch({"latest_committed_batch": None}) is None
    assert latest_committed_batch({"latest_committed_batch": 4}) == 4
