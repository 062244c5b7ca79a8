"""Page views per page and minute, from the website's click events.

Input, one JSON object per Kafka record (the collector's format):

    {"page": "/pricing", "user_id": "u-42", "ts": 1767225600000}

`ts` is when the click happened, in milliseconds since the epoch. Records that are not such
an object, or lack `page` or `ts`, are dropped.

Output, one record per (minute, page), keyed by the page, written once the watermark has
passed the minute's end (append mode: a minute is never revised):

    {"window_start": "2026-01-01T00:00:00.000Z", "window_end": "2026-01-01T00:01:00.000Z",
     "page": "/pricing", "views": 17}

Clicks that arrive more than `WATERMARK` after the newest one seen are too late for their
minute and are not counted. The sink is transactional: readers of the output topic use
`isolation.level=read_committed`.

Only DataFrame expressions, no Python UDFs: the executors never import this module, and the
same function runs as a bounded batch over a past interval (a backfill, where the watermark
does not apply and every record counts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

EVENT_SCHEMA = "page STRING, user_id STRING, ts BIGINT"
WINDOW = "1 minute"
WATERMARK = "2 minutes"


def page_views_per_minute(source: DataFrame) -> DataFrame:
    """Kafka source rows (`key`, `value`, `timestamp`, ...) -> (`key`, `value`) string rows for
    a Kafka sink. pyspark is imported here, not at module level: a submit only looks for this
    module's file, and nothing but the driver runs it."""
    from pyspark.sql import functions as F

    clicks = (
        source.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("click"))
        .select("click.page", "click.ts")
        .where(F.col("page").isNotNull() & F.col("ts").isNotNull())
        .select("page", F.timestamp_millis(F.col("ts")).alias("event_time"))
    )
    views = (
        clicks.withWatermark("event_time", WATERMARK)
        .groupBy(F.window("event_time", WINDOW), "page")
        .agg(F.count(F.lit(1)).alias("views"))
    )
    return views.select(
        F.col("page").alias("key"),
        F.to_json(
            F.struct(
                F.col("window.start").alias("window_start"),
                F.col("window.end").alias("window_end"),
                F.col("page"),
                F.col("views"),
            )
        ).alias("value"),
    )
