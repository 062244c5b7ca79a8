"""The exactly-once sink's fixed cost per micro-batch: small batches, where it is most of the
time, against Spark's own Kafka sink on the same batches.

One streaming query per variant reads the same input topic (`partitions` partitions,
`per_trigger` records a batch, availableNow) and writes a fresh topic:

- `spark_kafka_sink`: `writeStream.format("kafka")`, rows stay in the JVM;
- `exactly_once_sink`: `foreachBatch(ExactlyOnceKafkaSink)` as configured by default (the
  batch's slots shared by as many Spark tasks as cores);
- `exactly_once_task_per_slot`: the same with `max_tasks=0`, one Python task per slot.

Figures: the median of each variant's `addBatch` duration (Spark's progress report: the
sink's whole write of a batch) over the batches of its runs, the first batch of each run
left out (new producers, consumers and JIT). The variants run `repeats` times each, in an
order that alternates between repeats.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

from sink_throughput import _create, _produce, run_sink_query

VARIANTS: dict[str, dict[str, Any] | None] = {
    "spark_kafka_sink": None,
    "exactly_once_sink": {},
    "exactly_once_task_per_slot": {"max_tasks": 0},
}


def run(
    records: int = 3_000,
    per_trigger: int = 100,
    partitions: int = 6,
    size: int = 200,
    repeats: int = 3,
    cores: int = 2,
) -> dict[str, Any]:
    from airflow_provider_kafkaspark.spark.local_session import local_spark_session
    from kafkaspark_devstack.kafka import LocalKafkaCluster

    names = list(VARIANTS)
    with tempfile.TemporaryDirectory(prefix="kafkaspark-bench-overhead-") as tmp:
        base = Path(tmp)
        with LocalKafkaCluster(base / "kafka") as cluster:
            bootstrap = cluster.bootstrap_servers
            _create(bootstrap, ("in", partitions))
            _produce(bootstrap, "in", records, size)
            spark = local_spark_session("kafkaspark-bench-overhead", master=f"local[{cores}]")
            try:

                def batch_ms(name: str, variant: str) -> list[int]:
                    _create(bootstrap, (name, partitions))
                    query, _ = run_sink_query(
                        spark,
                        bootstrap,
                        "in",
                        per_trigger,
                        base / f"ckpt-{name}",
                        name,
                        VARIANTS[variant],
                    )
                    durations = [
                        int(p["durationMs"]["addBatch"])
                        for p in query.recentProgress
                        if p["numInputRows"]
                    ]
                    return durations[1:]

                for variant in names:  # warm-up: class loading, JIT, Python workers
                    batch_ms(f"warm-{variant}", variant)
                samples: dict[str, list[int]] = {name: [] for name in names}
                order: list[list[str]] = []
                for i in range(repeats):
                    this_round = names if i % 2 == 0 else list(reversed(names))
                    order.append(this_round)
                    for variant in this_round:
                        samples[variant].extend(batch_ms(f"out-{variant}-{i}", variant))
            finally:
                spark.stop()

    median = {name: statistics.median(values) for name, values in samples.items()}
    figures: dict[str, Any] = {
        "records": records,
        "per_trigger": per_trigger,
        "partitions": partitions,
        "record_bytes": size,
        "cores": cores,
        "repeats": repeats,
        "order": order,
        "batches_measured": {name: len(values) for name, values in samples.items()},
    }
    for name in names:
        figures[f"{name}_batch_ms_median"] = median[name]
        figures[f"{name}_batch_ms_p90"] = statistics.quantiles(samples[name], n=10)[-1]
    spark_ms = median["spark_kafka_sink"]
    figures["exactly_once_sink_minus_spark_ms"] = median["exactly_once_sink"] - spark_ms
    figures["task_per_slot_minus_spark_ms"] = median["exactly_once_task_per_slot"] - spark_ms
    return figures
