"""Per-batch overhead of management: the progress listener and the lag-group commit.

The same stateless job over the same input runs twice in one Spark session: once as a
plain query, once under `ManagedQuery` (lease heartbeat, progress.json, lag commits). The
listener and the commits run off the batch's thread, so the figures are the listener's own
time per batch, the commit's time per batch, and the batch durations of both runs (after
a warm-up run that is not measured).
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def run(records: int = 60_000, per_trigger: int = 5_000) -> dict[str, Any]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from airflow_provider_kafkaspark.core.control.folder import request_stop
    from airflow_provider_kafkaspark.spark.local_session import local_spark_session
    from airflow_provider_kafkaspark.spark.managed import ManagedOptions, ManagedQuery
    from kafkaspark_devstack.kafka import LocalKafkaCluster

    with tempfile.TemporaryDirectory(prefix="kafkaspark-bench-") as tmp:
        with LocalKafkaCluster(Path(tmp) / "kafka") as cluster:
            bootstrap = cluster.bootstrap_servers
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic("overhead", 3, 1)])["overhead"].result()
            producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 10})
            for i in range(records):
                producer.produce("overhead", value=str(i).encode())
                producer.poll(0)
            producer.flush(60)
            spark = local_spark_session("kafkaspark-bench-overhead")

            def start(name: str) -> Any:
                return (
                    spark.readStream.format("kafka")
                    .option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", "overhead")
                    .option("startingOffsets", "earliest")
                    .option("maxOffsetsPerTrigger", str(per_trigger))
                    .load()
                    .selectExpr("CAST(value AS STRING) AS v")
                    .writeStream.format("parquet")
                    .option("path", str(Path(tmp) / f"{name}-out"))
                    .option("checkpointLocation", str(Path(tmp) / f"{name}-cp"))
                    .trigger(availableNow=True)
                    .start()
                )

            start("warmup").awaitTermination()  # JIT and caches: not measured
            started = time.perf_counter()
            plain = start("plain")
            plain.awaitTermination()
            plain_s = time.perf_counter() - started
            plain_batches = [
                p["durationMs"]["triggerExecution"]
                for p in plain.recentProgress
                if p["numInputRows"] > 0
            ]

            checkpoint = str(Path(tmp) / "managed-cp")
            managed = ManagedQuery(
                spark,
                ManagedOptions(
                    job_name="overhead",
                    checkpoint=checkpoint,
                    kafka_config={"bootstrap.servers": bootstrap},
                    lag_group="kafkaspark.overhead",
                    handle_sigterm=False,
                ),
            )
            started = time.perf_counter()
            worker = threading.Thread(target=managed.run, args=(lambda: start("managed"),))
            worker.start()
            worker.join(600)
            managed_s = time.perf_counter() - started
            request_stop(checkpoint)  # harmless if already finished
            spark.stop()
            listener_ms = list(managed.listener.listener_ms)
            batch_ms = [b for b in managed.listener.batch_ms if b > 0]
            commit_ms = list(managed.lag.commit_ms) if managed.lag else []

    def mean(values: list[float]) -> float:
        return round(statistics.fmean(values), 2) if values else 0.0

    return {
        "records": records,
        "batches": len(batch_ms),
        "plain_batch_ms_mean": mean([float(b) for b in plain_batches]),
        "managed_batch_ms_mean": mean(batch_ms),
        "listener_ms_per_batch_mean": mean(listener_ms),
        "lag_commit_ms_per_batch_mean": mean(commit_ms),
        "listener_pct_of_batch": round(100 * mean(listener_ms) / mean(batch_ms), 2)
        if batch_ms
        else None,
        "lag_commit_pct_of_batch": round(100 * mean(commit_ms) / mean(batch_ms), 2)
        if batch_ms
        else None,
        "plain_total_s": round(plain_s, 2),
        "managed_total_s": round(managed_s, 2),
        "managed_over_plain": round(managed_s / plain_s, 2),
    }
