"""Checkpoints in Spark's on-disk format, written directly, for benchmarks of the reader.

Real Spark would need hours to leave 10,000 retained batches behind; the reader only sees
files, so files in the same format measure the same thing. Correctness is tested on
checkpoints written by real Spark (tests/integration).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

META = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1_700_000_000_000, "conf": {}})


def write_checkpoint(
    path: Path,
    *,
    batches: int,
    partitions: int,
    topic: str = "bench",
    state_bytes: int = 0,
    state_partitions: int = 4,
) -> Path:
    (path / "offsets").mkdir(parents=True)
    (path / "commits").mkdir()
    (path / "sources" / "0").mkdir(parents=True)
    (path / "metadata").write_text(json.dumps({"id": str(uuid.uuid4())}))
    (path / "sources" / "0" / "0").write_text(
        "v1\n" + json.dumps({topic: dict.fromkeys((str(p) for p in range(partitions)), 0)})
    )
    for batch in range(batches):
        offsets = {topic: {str(p): (batch + 1) * 100 for p in range(partitions)}}
        (path / "offsets" / str(batch)).write_text(f"v1\n{META}\n{json.dumps(offsets)}")
        (path / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    if state_bytes:
        versions = min(batches, 10)
        per_file = max(1, state_bytes // (state_partitions * versions))
        for part in range(state_partitions):
            folder = path / "state" / "0" / str(part)
            folder.mkdir(parents=True)
            for v in range(batches - versions + 1, batches + 1):
                (folder / f"{v}.delta").write_bytes(os.urandom(per_file))
    return path
