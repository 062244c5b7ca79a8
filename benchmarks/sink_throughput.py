"""Rows per second through the exactly-once Kafka sink vs Spark's own Kafka sink, both
against the raw confluent-kafka producer ceiling of the same data.

Both sinks read the same input topic with the same micro-batches (availableNow,
maxOffsetsPerTrigger) and write to a fresh output topic of the same partition count:

- `spark_kafka_sink`: `writeStream.format("kafka")`, at-least-once, rows stay in the JVM.
- `exactly_once_sink`: `foreachBatch(ExactlyOnceKafkaSink)` as configured by default, one
  transaction per (batch, task): rows go to Python workers as Arrow batches, and the
  workers keep their transactional producers and marker consumers between batches.
- with `variants=all`, two more exactly-once runs that each turn one of those off, to
  attribute the gain: `exactly_once_rows` (arrow=False: pickled Rows through
  `rdd.mapPartitionsWithIndex`) and `exactly_once_no_reuse` (reuse_clients=False: a new
  producer and init_transactions() and a new marker consumer in every task).
- `raw_producer`: the same records produced by plain (not transactional) confluent-kafka
  producers in as many processes as Spark has cores, without Spark: what this machine's
  broker and librdkafka allow a Python writer.

The broker keeps its log in memory (`broker_storage="memory"`, a tmpfs under /dev/shm) and
each run's output topic is deleted once counted: on this project's virtual disk, writeback of
the ~0.5 GB each run writes made the raw producer's own time vary from 3.0 to 5.0 s within
one benchmark run, more than the difference being measured. `broker_storage="disk"` keeps
the log on disk as before.

An untimed warm-up run of each sink (the whole input, as the timed runs) comes first, so that
no variant pays for class loading and JIT compilation alone, in Spark's JVM or in the
broker's (whose transactional paths only the exactly-once sink uses). With a warm-up of
200,000 records instead, the first timed runs took up to twice as long as the last ones, and
the exactly-once sink's times still fell from 9.7 to 7.3 s over seven repeats.

Each variant runs `repeats` times, in an order that alternates from one repeat to the next;
the median time of each is reported (and the best), with the per-task phase timings
(TaskResult.phases, mean seconds per task) of the exactly-once sink's median run and how its
tasks got their producers (created, reused, replaced after a fence).
Ratios are of the medians; each repeat's own ratio, and their median, are reported too.
"""

from __future__ import annotations

import multiprocessing
import shutil
import statistics
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


def _produce(bootstrap: str, topic: str, records: int, size: int, first: int = 0) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    payload = b"x" * size
    for i in range(first, first + records):
        while True:
            try:
                producer.produce(topic, key=str(i).encode(), value=payload)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("input records not acknowledged")


def _raw_ceiling(bootstrap: str, topic: str, records: int, size: int, processes: int) -> float:
    """Seconds for `processes` plain producers to write `records` records between them."""
    share = -(-records // processes)
    jobs = [
        (bootstrap, topic, min(share, records - i * share), size, i * share)
        for i in range(processes)
    ]
    context = multiprocessing.get_context("spawn")  # no librdkafka state from this process
    with context.Pool(processes) as pool:
        began = time.perf_counter()
        pool.starmap(_produce, jobs)
        return time.perf_counter() - began


def _create(bootstrap: str, *topics: tuple[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, p, 1) for t, p in topics]).values():
        future.result()


def _delete(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics([topic]).values():
        future.result()


# Deleted topics' files go at once, not a minute later: the log may be in memory.
_BROKER_CONFIG = {"file.delete.delay.ms": "1000"}

# Room the log needs in memory besides the records themselves: indexes, checkpoints, and
# slack for deleted topics the broker has not removed yet (`file.delete.delay.ms`).
_MEMORY_HEADROOM_BYTES = 4 << 30
# A record's bytes in the log beyond its value: key, headers and batch overhead, rounded up.
_RECORD_OVERHEAD_BYTES = 70
# Copies of the input the log may hold at once: the input topic, the output topic being
# written, and the one deleted before it.
_COPIES_IN_MEMORY = 3


def _work_parent(storage: str, records: int, size: int) -> str | None:
    """The directory for the benchmark's work directory (the broker's log, checkpoints):
    tmpfs for "memory", None (the default temporary directory) for "disk"."""
    if storage == "disk":
        return None
    if storage != "memory":
        raise ValueError(f"broker_storage must be 'memory' or 'disk', got {storage!r}")
    shm = Path("/dev/shm")
    needed = _MEMORY_HEADROOM_BYTES + _COPIES_IN_MEMORY * records * (size + _RECORD_OVERHEAD_BYTES)
    if not shm.is_dir() or shutil.disk_usage(shm).free < needed:
        raise RuntimeError(
            f"broker_storage='memory' needs {needed >> 20} MiB free in {shm}; "
            "pass broker_storage=disk"
        )
    return str(shm)


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


def run_sink_query(
    spark: Any,
    bootstrap: str,
    source: str,
    per_trigger: int,
    checkpoint: Path,
    out: str,
    sink_settings: dict[str, Any] | None,
) -> tuple[Any, Any]:
    """Copy topic `source` to topic `out` (key and value) in batches of `per_trigger` records
    until the source's end (availableNow): through Spark's own Kafka sink when
    `sink_settings` is None, else through an `ExactlyOnceKafkaSink` with those settings.
    Returns the finished query and the sink (None for Spark's)."""
    from airflow_provider_kafkaspark.spark.sink.driver import ExactlyOnceKafkaSink

    writer = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(per_trigger))
        .load()
        .selectExpr("key", "value")
        .writeStream.option("checkpointLocation", str(checkpoint))
    )
    sink = None
    if sink_settings is None:
        writer = writer.format("kafka").option("kafka.bootstrap.servers", bootstrap)
        writer = writer.option("topic", out)
    else:
        sink = ExactlyOnceKafkaSink(
            producer_config={"bootstrap.servers": bootstrap, "linger.ms": 5},
            topic=out,
            sink_id=f"bench-{out}",
            query_id="bench",
            **sink_settings,
        )
        writer = writer.foreachBatch(sink)
    query = writer.trigger(availableNow=True).start()
    query.awaitTermination(3600)
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return query, sink


def _median_run(seconds: list[float]) -> int:
    """The index of the run whose time is the median (the upper one of an even count)."""
    return sorted(range(len(seconds)), key=lambda i: seconds[i])[len(seconds) // 2]


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
    records: int = 2_000_000,
    size: int = 200,
    partitions: int = 6,
    per_trigger: int = 500_000,
    repeats: int = 3,
    variants: str = "default",
    cores: int = 2,
    broker_storage: str = "memory",
) -> dict[str, Any]:
    """`variants`: "default" (Spark's sink and the exactly-once sink) or "all". `cores`: the
    local Spark's, and the raw ceiling's processes. `broker_storage`: "memory" or "disk"
    (see the module's docstring)."""
    from airflow_provider_kafkaspark.spark.local_session import local_spark_session
    from kafkaspark_devstack.kafka import LocalKafkaCluster

    if variants not in ("default", "all"):
        raise ValueError(f"variants must be 'default' or 'all', got {variants!r}")
    eo_names = list(EO_VARIANTS) if variants == "all" else ["exactly_once_sink"]
    names = ["spark", *eo_names, "raw"]
    parent = _work_parent(broker_storage, records, size)
    with tempfile.TemporaryDirectory(prefix="kafkaspark-bench-sink-", dir=parent) as tmp:
        base = Path(tmp)
        with LocalKafkaCluster(base / "kafka", broker_config=_BROKER_CONFIG) as cluster:
            bootstrap = cluster.bootstrap_servers
            _create(bootstrap, ("in", partitions))
            _produce(bootstrap, "in", records, size)
            spark = local_spark_session("kafkaspark-bench-sink", master=f"local[{cores}]")
            try:

                def timed(name: str, variant: str, topic: str, per: int) -> tuple[float, Any]:
                    _create(bootstrap, (name, partitions))
                    settings = None if variant == "spark" else EO_VARIANTS[variant]
                    start = time.perf_counter()
                    query, sink = run_sink_query(
                        spark, bootstrap, topic, per, base / f"ckpt-{name}", name, settings
                    )
                    seconds = time.perf_counter() - start
                    batch_ms[variant].append(
                        [int(p["durationMs"]["triggerExecution"]) for p in query.recentProgress]
                    )
                    return seconds, sink

                batch_ms: dict[str, list[list[int]]] = {name: [] for name in names}
                for variant in ("spark", *eo_names):
                    timed(f"warm-{variant}", variant, "in", per_trigger)
                    _delete(bootstrap, f"warm-{variant}")
                    batch_ms[variant].clear()
                times: dict[str, list[float]] = {name: [] for name in names}
                sinks: dict[str, list[Any]] = {name: [] for name in eo_names}
                order: list[list[str]] = []
                for i in range(repeats):
                    # Alternating the order spreads drift in the machine's load (page cache,
                    # log segments, JIT) over all variants.
                    this_round = names if i % 2 == 0 else list(reversed(names))
                    order.append(this_round)
                    for variant in this_round:
                        name = f"out-{variant}-{i}"
                        if variant == "raw":
                            _create(bootstrap, (name, partitions))
                            seconds = _raw_ceiling(bootstrap, name, records, size, cores)
                            times[variant].append(seconds)
                            _delete(bootstrap, name)
                            continue
                        seconds, sink = timed(name, variant, "in", per_trigger)
                        # Spark's sink writes each row once here (no failures); ours too.
                        written = _end_offsets(bootstrap, name, partitions)
                        if variant == "spark" and written != records:
                            raise RuntimeError(f"{name}: {written} records, wanted {records}")
                        if sink is not None:
                            rows = sum(r.rows_written for r in sink.reports)
                            if rows != records:
                                raise RuntimeError(f"{name}: {rows} rows, wanted {records}")
                            sinks[variant].append(sink)
                        times[variant].append(seconds)
                        _delete(bootstrap, name)
            finally:
                spark.stop()

    median = {name: statistics.median(values) for name, values in times.items()}
    figures: dict[str, Any] = {
        "records": records,
        "record_bytes": size,
        "partitions": partitions,
        "per_trigger": per_trigger,
        "cores": cores,
        "repeats": repeats,
        "broker_storage": broker_storage,
        "order": order,
        "seconds": {name: [round(v, 3) for v in values] for name, values in times.items()},
    }
    labels = {"spark": "spark_kafka_sink", "raw": "raw_producer"}
    for name in names:
        label = labels.get(name, name)
        figures[f"{label}_seconds_median"] = round(median[name], 3)
        figures[f"{label}_records_per_s"] = round(records / median[name])
        figures[f"{label}_records_per_s_best"] = round(records / min(times[name]))
    for variant in eo_names:
        figures[f"{variant}_to_spark_ratio"] = round(median["spark"] / median[variant], 3)
        # Each repeat's own ratio (Spark's run and this one ran next to each other): the
        # machine's drift between repeats cancels out of these.
        rounds = [s / v for s, v in zip(times["spark"], times[variant], strict=True)]
        figures[f"{variant}_to_spark_ratio_by_repeat"] = [round(r, 3) for r in rounds]
        figures[f"{variant}_to_spark_ratio_median_of_repeats"] = round(statistics.median(rounds), 3)
        figures[f"{variant}_to_raw_ratio"] = round(median["raw"] / median[variant], 3)
    figures["spark_kafka_sink_to_raw_ratio"] = round(median["raw"] / median["spark"], 3)
    figures["goal_ratio"] = 0.9
    figures["goal_met"] = figures["exactly_once_sink_to_spark_ratio"] >= 0.9
    eo_runs = sinks["exactly_once_sink"]
    middle = _median_run(times["exactly_once_sink"])
    figures["exactly_once_batches"] = [r.to_dict() for r in eo_runs[middle].reports]
    # Spark's own figure for each batch (progress `triggerExecution`, ms) of each variant's
    # median run: where the two sinks' times part.
    figures["batch_ms_of_median_run"] = {
        labels.get(name, name): batch_ms[name][_median_run(times[name])]
        for name in names
        if name != "raw"
    }
    # Every run's batches, and how each exactly-once run's tasks got their producers: the
    # spread between runs of one variant is mostly in a few batches, and in whether the
    # workers kept their slots' producers (see sink_clients).
    figures["batch_ms_by_run"] = {
        labels.get(name, name): batch_ms[name] for name in names if name != "raw"
    }
    figures["exactly_once_producers_by_run"] = {
        variant: [_task_figures(run.task_results)["producers"] for run in runs]
        for variant, runs in sinks.items()
    }
    figures["exactly_once_tasks"] = {
        variant: _task_figures(runs[len(runs) // 2].task_results) for variant, runs in sinks.items()
    }
    return figures
