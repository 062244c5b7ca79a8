"""The README demo: a real local Kafka broker, sample events, a Spark streaming query.

Run with `make demo` (sets everything up first) or `python -m airflow_provider_kafkaspark.demo`.
Everything lives in a temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from airflow_provider_kafkaspark.examples.access_events import (
    SOURCE_TOPIC,
    generate_events,
    produce_events,
)


def _say(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def run(events: int, partitions: int, workdir: Path) -> dict[str, object]:
    from confluent_kafka.admin import AdminClient, NewTopic
    from pyspark.sql import functions as F

    from airflow_provider_kafkaspark.local.kafka import LocalKafkaCluster
    from airflow_provider_kafkaspark.local.spark import local_spark_session

    _say("starting a local Kafka broker (KRaft mode)")
    with LocalKafkaCluster(workdir / "kafka") as cluster:
        bootstrap = cluster.bootstrap_servers
        _say(f"Kafka is up at {bootstrap}")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(SOURCE_TOPIC, partitions, 1)]).values():
            future.result()
        produced = produce_events(bootstrap, SOURCE_TOPIC, generate_events(events))
        _say(f"produced {produced} access events to {SOURCE_TOPIC} ({partitions} partitions)")

        _say("starting Spark (local mode) with the Kafka connector")
        spark = local_spark_session("kafkaspark-demo")
        try:
            source = (
                spark.readStream.format("kafka")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", SOURCE_TOPIC)
                .option("startingOffsets", "earliest")
                .option("maxOffsetsPerTrigger", max(1, events // 4))
                .load()
            )
            schema = "ip STRING, ts LONG, path STRING, status INT"
            counts = (
                source.select(F.from_json(F.col("value").cast("string"), schema).alias("e"))
                .select("e.ip", (F.col("e.ts") / 1000).cast("timestamp").alias("event_time"))
                .withWatermark("event_time", "10 seconds")
                .groupBy(F.window("event_time", "5 seconds"), "ip")
                .count()
            )
            query = (
                counts.writeStream.outputMode("update")
                .format("memory")
                .queryName("ip_counts")
                .option("checkpointLocation", str(workdir / "checkpoint"))
                .trigger(availableNow=True)
                .start()
            )
            seen = 0
            while query.isActive or seen < len(query.recentProgress):
                for progress in query.recentProgress[seen:]:
                    end = progress["sources"][0]["endOffset"]
                    end = json.loads(end) if isinstance(end, str) else end
                    _say(
                        f"batch {progress['batchId']}: {progress['numInputRows']} rows, "
                        f"{progress.get('processedRowsPerSecond', 0.0):.0f} rows/s, "
                        f"end offsets {json.dumps(end, sort_keys=True)}"
                    )
                seen = len(query.recentProgress)
                time.sleep(0.5)
            if query.exception() is not None:
                raise RuntimeError(f"the demo query failed: {query.exception()}")
            totals = spark.sql(
                "SELECT ip, SUM(count) AS requests FROM "
                "(SELECT ip, window, MAX(count) AS count FROM ip_counts GROUP BY ip, window) "
                "GROUP BY ip ORDER BY requests DESC"
            ).collect()
            read = sum(int(p["numInputRows"]) for p in query.recentProgress)
            summary: dict[str, object] = {
                "events_produced": produced,
                "records_read": read,
                "batches": len(query.recentProgress),
                "distinct_ips": len(totals),
                "top_ips": {r["ip"]: int(r["requests"]) for r in totals[:5]},
            }
        finally:
            spark.stop()
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kafkaspark-demo-") as tmp:
        summary = run(args.events, args.partitions, Path(tmp))
    _say("summary: " + json.dumps(summary, indent=2))
    if summary["records_read"] != summary["events_produced"]:
        _say("records read differ from events produced")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
