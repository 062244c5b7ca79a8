"""CheckpointReader latency: the latest position vs a full read of every retained batch.

`position()` is what sensors poll; it should grow with one directory listing only, while
`validate()` reads every retained file. Both are timed on the same checkpoints in one run.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from synthetic_checkpoint import write_checkpoint

from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader


def _median_ms(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 2)


def run(repeat: int = 5) -> dict[str, Any]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="kafkaspark-bench-") as tmp:
        for batches in (100, 1_000, 10_000):
            for partitions in (10, 1_000):
                if batches == 10_000 and partitions == 1_000:
                    continue  # 10,000 files of 20 KB each: minutes to write, same shape
                path = write_checkpoint(
                    Path(tmp) / f"b{batches}-p{partitions}", batches=batches, partitions=partitions
                )
                reader = CheckpointReader(str(path))
                position_ms = _median_ms(reader.position, repeat)
                full_ms = _median_ms(reader.validate, max(1, repeat // 2))
                rows.append(
                    {
                        "retained_batches": batches,
                        "partitions": partitions,
                        "position_ms": position_ms,
                        "full_read_ms": full_ms,
                        "full_over_position": round(full_ms / position_ms, 1),
                    }
                )
    by = {(r["retained_batches"], r["partitions"]): r for r in rows}
    return {
        "rows": rows,
        "position_growth_100_to_10000_batches_p10": round(
            by[(10_000, 10)]["position_ms"] / by[(100, 10)]["position_ms"], 2
        ),
        "full_read_growth_100_to_10000_batches_p10": round(
            by[(10_000, 10)]["full_read_ms"] / by[(100, 10)]["full_read_ms"], 2
        ),
    }
