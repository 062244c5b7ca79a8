"""What the UI tier decides from facts it observed, without I/O: where a screenshot goes,
when to produce records so that the job's lag holds still while it is read, and the figures
read off the page and the CLI's JSON."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def screenshot_targets(name: str, artifacts: Path, docs: Path, *, update: bool) -> list[Path]:
    """Always artifacts/<name>.png; docs/<name>.png too when the docs' copies are updated."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", name):
        raise ValueError(f"screenshot name {name!r}: lower-case letters, digits, '-' and '_'")
    file = f"{name}.png"
    return [artifacts / file, docs / file] if update else [artifacts / file]


def quiet_start(now_s: float, interval_s: float, needed_s: float, margin_s: float = 2.0) -> float:
    """When to produce records that a job must leave unread for `needed_s` seconds.

    Spark starts a processing-time trigger's micro-batches at multiples of the interval since
    the epoch (ProcessingTimeExecutor.nextBatchTime), and runs one at such a moment only when
    new records wait. Records produced now stay unread until the next multiple: now, if that is
    at least `needed_s` away; else just after it (`margin_s`), when nothing new waited for it.
    """
    if not 0 < needed_s <= interval_s - margin_s:
        raise ValueError(f"needed_s={needed_s} must be in (0, interval_s - margin_s]")
    next_trigger = (now_s // interval_s + 1) * interval_s
    if next_trigger - now_s >= needed_s:
        return now_s
    return next_trigger + margin_s


def cell_number(text: str) -> int | None:
    """A count as the page shows it ("1,250", " 0 "), or None for "unknown"."""
    shown = text.strip().replace(",", "")
    if shown.lower() == "unknown":
        return None
    if not re.fullmatch(r"\d+", shown):
        raise ValueError(f"not a count: {text!r}")
    return int(shown)


def latest_committed_batch(inspected: Mapping[str, Any]) -> int | None:
    """`kafkaspark checkpoint inspect --json`: the newest batch whose commit is written."""
    batch = inspected["latest_committed_batch"]
    return None if batch is None else int(batch)


def topic_lag(reconciled: Mapping[str, Any], topic: str) -> int:
    """`kafkaspark reconcile --json`: records of `topic` waiting past the checkpoint's offsets,
    summed over its partitions. The JSON lists the most lagging partitions only: a list it cut
    short cannot give a topic's total."""
    lag = reconciled["lag"]
    if int(lag["truncated"]):
        raise ValueError(f"reconcile listed only the top {len(lag['top'])} lagging partitions")
    return sum(int(entry["lag_records"]) for entry in lag["top"] if entry["topic"] == topic)
