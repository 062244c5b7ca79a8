"""What the tiers that run the production examples (`examples/production/`) share: the
example's connections file read as Airflow reads it, and the clicks the clickstream job
counts, with the page views it must write for them."""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from tests.integration.kafka_util import read_all_values

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "production"
JOB_NAME = "clickstream_page_views"
SOURCE, SINK = "clickstream.events", "clickstream.page_views_per_minute"
SINK_PARTITIONS = 2
# 2026-01-01T00:00:00Z: the clicks' event time starts here.
BASE_MS = 1_767_225_600_000
MINUTE_MS = 60_000
PAGES = ("/", "/pricing", "/docs", "/blog", "/signup")


def example_connections(path: Path) -> dict[str, dict[str, Any]]:
    """The file's AIRFLOW_CONN_* values by variable, the active lines and (under the same
    name, suffixed by their place) the commented alternatives."""
    found: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^(#\s*)?(AIRFLOW_CONN_\w+)=(.*)$", line.strip())
        if not match:
            continue
        name = match.group(2) if not match.group(1) else f"{match.group(2)}#{len(found)}"
        found[name] = json.loads(shlex.split(match.group(3))[0])
    return found


def s3_compatible_aws(given: dict[str, dict[str, Any]], ours: dict[str, Any]) -> dict[str, Any]:
    """The example's `aws` alternative for an S3-compatible store, with the keys and the
    endpoint of `ours` (a test store's `aws` connection)."""
    (aws,) = [
        v
        for k, v in given.items()
        if k.startswith("AIRFLOW_CONN_AWS_STREAMING#") and "endpoint_url" in v.get("extra", {})
    ]
    aws.update(login=ours["login"], password=ours["password"])
    aws["extra"].update(ours["extra"])
    return aws


def produce_clicks(bootstrap: str, minutes: range, per_minute: int) -> Counter[tuple[str, str]]:
    """Clicks in each minute of `minutes` (after BASE_MS); the views per (minute, page)."""
    producer = Producer({"bootstrap.servers": bootstrap})
    counts: Counter[tuple[str, str]] = Counter()
    for minute in minutes:
        for i in range(per_minute):
            page = PAGES[(i * 7 + minute) % len(PAGES)]
            ts = BASE_MS + minute * MINUTE_MS + (i * 997) % MINUTE_MS
            click = {"page": page, "user_id": f"u-{i % 50}", "ts": ts}
            producer.produce(SOURCE, json.dumps(click).encode(), key=page.encode())
            counts[(iso(BASE_MS + minute * MINUTE_MS), page)] += 1
    # A click far later in event time moves the watermark past every minute above.
    flush = {"page": "/flush", "user_id": "u-0", "ts": BASE_MS + (minutes.stop + 10) * MINUTE_MS}
    producer.produce(SOURCE, json.dumps(flush).encode())
    assert producer.flush(30) == 0
    return counts


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def page_views(bootstrap: str) -> Counter[tuple[str, str]]:
    """The sink's (window start, page) rows, counted by how often each was written, with the
    views each says; a row written twice shows as a second entry."""
    seen: Counter[tuple[str, str]] = Counter()
    for value in read_all_values(bootstrap, SINK, SINK_PARTITIONS):
        row = json.loads(value)
        if row["page"] != "/flush":
            seen[(row["window_start"], row["page"])] += int(row["views"])
    return seen
