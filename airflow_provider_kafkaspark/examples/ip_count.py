"""The classic example job: requests per IP per 5-second event-time window.

Input: JSON access events on `ip_count_source` (see `access_events`). Output: one record per
(window, IP) on `ip_count_sink`, written by the exactly-once Kafka sink once the watermark
(10 s) closes the window (append mode), keyed by IP. Readers of the sink topic must use
`isolation.level=read_committed`, or they also see records of aborted transactions.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from airflow_provider_kafkaspark.examples.access_events import (
    SINK_TOPIC,
    SOURCE_TOPIC,
    AccessEvent,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

WINDOW_MS = 5_000
WATERMARK = "10 seconds"
EVENT_SCHEMA = "ip STRING, ts LONG, path STRING, status INT"


def transform(source: DataFrame) -> DataFrame:
    """Kafka source rows -> (key, value) rows for a Kafka sink."""
    from pyspark.sql import functions as F

    events = source.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"))
    counted = (
        events.select("e.ip", (F.col("e.ts") / 1000).cast("timestamp").alias("event_time"))
        .withWatermark("event_time", WATERMARK)
        .groupBy(F.window("event_time", "5 seconds"), "ip")
        .count()
    )
    return counted.select(
        F.col("ip").alias("key"),
        F.to_json(
            F.struct(
                (F.col("window.start").cast("long") * 1000).alias("window_start_ms"),
                F.col("ip"),
                F.col("count"),
            )
        ).alias("value"),
    )


def expected_counts(
    events: Iterable[AccessEvent], closed_before_ms: int
) -> Counter[tuple[int, str]]:
    """(window start ms, ip) -> count, for windows that end at or before `closed_before_ms`."""
    counts: Counter[tuple[int, str]] = Counter()
    for event in events:
        start = event.event_time_ms - event.event_time_ms % WINDOW_MS
        if start + WINDOW_MS <= closed_before_ms:
            counts[(start, event.ip)] += 1
    return counts


def job_spec_dict(
    *,
    bootstrap_servers: str,
    checkpoint: str,
    job_name: str = "ip_count",
    sink_kind: str = "kafka_exactly_once",
    trigger_interval: str = "2 seconds",
    max_offsets_per_trigger: int | None = 2_000,
    source_topic: str = SOURCE_TOPIC,
    sink_topic: str = SINK_TOPIC,
) -> dict[str, object]:
    """The example's job spec, as the demo, the tests and the DAGs submit it."""
    return {
        "job_name": job_name,
        "source": {
            "bootstrap_servers": bootstrap_servers,
            "subscribe": [source_topic],
            "starting_offsets": "earliest",
            "max_offsets_per_trigger": max_offsets_per_trigger,
        },
        "transformation": "airflow_provider_kafkaspark.examples.ip_count:transform",
        "sink": {"kind": sink_kind, "topic": sink_topic, "output_mode": "append"},
        "checkpoint_location": checkpoint,
        "trigger_interval": trigger_interval,
    }


def sink_windows(values: Iterable[str | bytes]) -> tuple[dict[tuple[int, str], int], int]:
    """The sink's rows read back: (window start ms, ip) -> count, and the number of rows that
    repeat a window already seen (duplicates; an append-mode sink writes each window once)."""
    counts: dict[tuple[int, str], int] = {}
    duplicates = 0
    for value in values:
        row = json.loads(value)
        key = (int(row["window_start_ms"]), str(row["ip"]))
        duplicates += key in counts
        counts[key] = int(row["count"])
    return counts, duplicates
