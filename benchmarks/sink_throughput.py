"""Rows per second through the exactly-once Kafka sink vs Spark's own Kafka sink.

Both read the same input topic with the same micro-batches (availableNow,
maxOffsetsPerTrigger) and write to a fresh output topic of the same partition count:

- `spark_kafka_sink`: `writeStream.format("kafka")`, at-least-once, rows stay in the JVM.
- `exactly_once_sink`: `foreachBatch(ExactlyOnceKafkaSink)` as configured by default, one
  transaction per (batch, task): rows go to Python workers as Arrow batches, and the
  workers keep their transactional producers and marker consumers between batches.
- with `variants=all`, two more exactly-once runs that each turn one of those off, to
  attribute the gain: `exactly_once_rows` (arrow=False: pickled Rows through
  `rdd.mapPartitionsWithIndex`) and `exactly_once_no_reuse` (reuse_clients=False: a new
  producer and init_transactions() and a new marker consumer in every task).

A small warm-up query runs first so that no variant pays for JVM class loading alone.
Each variant runs `repeats` times in alternation; the best time of each is reported, with
the per-task phase timings (TaskResult.phases, mean seconds per task) of its best run and
how its tasks got their producers (created, reused, replaced after a fence).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

# Sink settings of each exactly-once variant (ExactlyOnceKafkaSink keyword arguments).
EO_VARIANTS: dict[str, dict[str, Any]] = {
    "exactly_once_sink": {},
    "exactly_once_rows": {"arrow": False},
    "exactly_once_no_reuse": {"reuse_clients": False},
}


def _produce(bootstrap: str, topic: str, records: int, size: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    payload = b"x" * size
    for i in range(records):
        while True:
            try:
                producer.produce(topic, key=str(i).encode(), value=payload)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("input records not acknowledged")


def _create(bootstrap: str, *topics: tuple[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, p, 1) for t, p in topics]).values():
        future.result()


def _end_offsets(bootstrap: str, topic: str, partitions: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-sink-wm"})
    try:
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(partitions)
        )
    finally:
        consumer.close()


def _task_figures(batches: list[list[Any]]) -> dict[str, Any]:
    """Mean seconds per task in each phase, and how the tasks got their producers."""
    tasks = [t for batch in batches for t in batch]
    count = max(1, len(tasks))
    totals: dict[str, float] = {}
    for t in tasks:
        for phase, seconds in t.phases.items():
            totals[phase] = totals.get(phase, 0.0) + seconds
    producers: dict[str, int] = {}
    for t in tasks:
        producers[t.producer] = producers.get(t.producer, 0) + 1
    return {
        "tasks": len(tasks),
        "task_seconds_mean": round(sum(t.seconds for t in tasks) / count, 4),
        "phase_seconds_mean": {k: round(v / count, 4) for k, v in totals.items()},
        "producers": producers,
        "python_workers": len({t.worker_pid for t in tasks}),
    }


def run(
    records: int = 200_000,
    size: int = 100,
    partitions: int = 3,
    per_trigger: int = 50_000,
    repeats: int = 2,
    variants: str = "all",
) -> dict[str, Any]:
    """`variants`: "default" (Spark's sink and the exactly-once sink) or "all"."""
    from airflow_provider_kafkaspark.local.kafka import LocalKafkaCluster
    from airflow_provider_kafkaspark.local.spark import local_spark_session
    from airflow_provider_kafkaspark.spark.kafka_sink import ExactlyOnceKafkaSink

    if variants not in ("default", "all"):
        raise ValueError(f"variants must be 'default' or 'all', got {variants!r}")
    eo_names = list(EO_VARIANTS) if variants == "all" else ["exactly_once_sink"]

    with tempfile.TemporaryDirectory(prefix="kafkaspark-bench-sink-") as tmp:
        base = Path(tmp)
        with LocalKafkaCluster(base / "kafka") as cluster:
            bootstrap = cluster.bootstrap_servers
            _create(bootstrap, ("in", partitions), ("warm", partitions))
            _produce(bootstrap, "in", records, size)
            spark = local_spark_session("kafkaspark-bench-sink")
            try:

                def source(per: int) -> Any:
                    return (
                        spark.readStream.format("kafka")
                        .option("kafka.bootstrap.servers", bootstrap)
                        .option("subscribe", "in")
                        .option("startingOffsets", "earliest")
                        .option("maxOffsetsPerTrigger", str(per))
                        .load()
                        .selectExpr("key", "value")
                    )

                def timed(name: str, variant: str, per: int) -> tuple[float, Any]:
                    _create(bootstrap, (name, partitions))
                    sink = None
                    writer = source(per).writeStream.option(
                        "checkpointLocation", str(base / f"ckpt-{name}")
                    )
                    if variant == "spark":
                        writer = (
                            writer.format("kafka")
                            .option("kafka.bootstrap.servers", bootstrap)
                            .option("topic", name)
                        )
                    else:
                        sink = ExactlyOnceKafkaSink(
                            producer_config={"bootstrap.servers": bootstrap, "linger.ms": 5},
                            topic=name,
                            sink_id=f"bench-{name}",
                            query_id="bench",
                            **EO_VARIANTS[variant],
                        )
                        writer = writer.foreachBatch(sink)
                    start = time.perf_counter()
                    query = writer.trigger(availableNow=True).start()
                    query.awaitTermination(1800)
                    seconds = time.perf_counter() - start
                    if query.exception() is not None:
                        raise RuntimeError(str(query.exception()))
                    return seconds, sink

                timed("warm-spark", "spark", per_trigger)
                for name in eo_names:
                    timed(f"warm-{name}", name, per_trigger)
                best: dict[str, float] = {}
                batches = 0
                reports: list[dict[str, Any]] = []
                tasks: dict[str, dict[str, Any]] = {}
                for i in range(repeats):
                    for variant in ("spark", *eo_names):
                        name = f"out-{variant}-{i}"
                        seconds, sink = timed(name, variant, per_trigger)
                        # Spark's sink writes each row once here (no failures); ours too.
                        written = _end_offsets(bootstrap, name, partitions)
                        if variant == "spark" and written != records:
                            raise RuntimeError(f"{name}: {written} records, wanted {records}")
                        if sink is not None:
                            rows = sum(r.rows_written for r in sink.reports)
                            if rows != records:
                                raise RuntimeError(f"{name}: {rows} rows, wanted {records}")
                        if seconds < best.get(variant, float("inf")):
                            best[variant] = seconds
                            if sink is not None:
                                tasks[variant] = _task_figures(sink.task_results)
                                if variant == "exactly_once_sink":
                                    batches = len(sink.reports)
                                    reports = [r.to_dict() for r in sink.reports]
            finally:
                spark.stop()

    figures: dict[str, Any] = {
        "records": records,
        "record_bytes": size,
        "partitions": partitions,
        "per_trigger": per_trigger,
        "batches": batches,
        "repeats": repeats,
        "spark_kafka_sink_seconds": round(best["spark"], 3),
        "spark_kafka_sink_records_per_s": round(records / best["spark"]),
    }
    for variant in eo_names:
        figures[f"{variant}_seconds"] = round(best[variant], 3)
        figures[f"{variant}_records_per_s"] = round(records / best[variant])
    figures["exactly_once_to_spark_ratio"] = round(best["spark"] / best["exactly_once_sink"], 2)
    for variant in eo_names[1:]:
        figures[f"{variant}_to_spark_ratio"] = round(best["spark"] / best[variant], 2)
    figures["exactly_once_batches"] = reports
    figures["exactly_once_tasks"] = tasks
    return figures
