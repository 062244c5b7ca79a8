"""Where an exactly-once sink task spends its time: cProfile of the executor-side task
(`sink_task.write_slot`: Arrow rows to tuples, the transaction, `produce()` per row, the
commit) in this process, on Arrow record batches like those Spark hands a Python worker, into
a real local Kafka. Spark's own part (reading Kafka, Arrow serialisation to the worker) is
not in it: `sink_throughput` measures the whole.

Figures: records/s of the task alone (without the profiler), and the functions with the most
time of their own (`tottime`) and with what they call (`cumtime`) under the profiler.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import tempfile
import time
from pathlib import Path
from typing import Any

from sink_throughput import _create


def _batches(records: int, size: int, per_batch: int) -> list[Any]:
    import pyarrow as pa

    value = b"x" * size
    out = []
    for start in range(0, records, per_batch):
        n = min(per_batch, records - start)
        keys = pa.array([str(i).encode() for i in range(start, start + n)], pa.binary())
        values = pa.array([value] * n, pa.binary())
        out.append(pa.RecordBatch.from_arrays([values, keys], names=["value", "key"]))
    return out


def _top(stats: pstats.Stats, key: str, limit: int) -> list[dict[str, Any]]:
    stats.sort_stats(key)
    rows = []
    for func in stats.fcn_list[:limit]:  # type: ignore[attr-defined]
        _, calls, tottime, cumtime, _ = stats.stats[func]  # type: ignore[attr-defined]
        rows.append(
            {
                "function": f"{Path(func[0]).name}:{func[1]}({func[2]})",
                "calls": calls,
                "tottime_s": round(tottime, 3),
                "cumtime_s": round(cumtime, 3),
            }
        )
    return rows


def run(
    records: int = 300_000, size: int = 200, per_batch: int = 10_000, limit: int = 15
) -> dict[str, Any]:
    from airflow_provider_kafkaspark.spark.sink.clients import close_cached_clients
    from airflow_provider_kafkaspark.spark.sink.config import SinkTaskConfig
    from airflow_provider_kafkaspark.spark.sink.rows import arrow_rows
    from airflow_provider_kafkaspark.spark.sink.task import write_slot
    from kafkaspark_devstack.kafka import LocalKafkaCluster

    batches = _batches(records, size, per_batch)
    with tempfile.TemporaryDirectory(prefix="kafkaspark-bench-profile-") as tmp:
        with LocalKafkaCluster(Path(tmp) / "kafka") as cluster:
            bootstrap = cluster.bootstrap_servers
            _create(bootstrap, ("out", 1))
            config = SinkTaskConfig(
                producer_config={
                    "bootstrap.servers": bootstrap,
                    "enable.idempotence": True,
                    "transaction.timeout.ms": 60_000,
                },
                consumer_config={"bootstrap.servers": bootstrap},
                topic="out",
                sink_id="bench-profile",
                query_id="bench",
                columns=("value", "key"),
                operation_timeout_s=60.0,
            )

            def task(batch_id: int) -> dict[str, Any]:
                return write_slot(config, batch_id, 0, arrow_rows(batches, config.columns))

            task(0)  # a producer and marker consumer kept for the timed runs, as in a worker
            began = time.perf_counter()
            plain = task(1)
            seconds = time.perf_counter() - began
            profiler = cProfile.Profile()
            profiler.enable()
            task(2)
            profiler.disable()
            close_cached_clients()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    return {
        "records": records,
        "record_bytes": size,
        "arrow_batch_rows": per_batch,
        "task_seconds": round(seconds, 3),
        "task_records_per_s": round(records / seconds),
        "task_phases_s": plain["phases"],
        "profiled_seconds": round(stats.total_tt, 3),  # type: ignore[attr-defined]
        "by_own_time": _top(stats, "tottime", limit),
        "by_cumulative_time": _top(stats, "cumtime", limit),
    }
