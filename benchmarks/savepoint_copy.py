"""Savepoint creation time vs state size, against a plain recursive copy of the same files.

The savepoint reads every file once, checksums it while copying and writes a manifest; the
ratio to `shutil.copytree` (taken in the same run, on the same files) is its overhead.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from synthetic_checkpoint import write_checkpoint

from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore


def run(sizes_mb: str = "1,16,128") -> dict[str, Any]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="kafkaspark-bench-") as tmp:
        for size_mb in (int(s) for s in str(sizes_mb).split(",")):
            cp = write_checkpoint(
                Path(tmp) / f"cp-{size_mb}",
                batches=100,
                partitions=10,
                state_bytes=size_mb * 1_000_000,
            )
            start = time.perf_counter()
            shutil.copytree(cp, Path(tmp) / f"plain-{size_mb}")
            plain_s = time.perf_counter() - start
            store = SavepointStore(str(Path(tmp) / f"sp-{size_mb}"))
            start = time.perf_counter()
            manifest = store.create(str(cp), job_name="bench")
            savepoint_s = time.perf_counter() - start
            start = time.perf_counter()
            verified = store.verify(manifest.savepoint_id).ok
            verify_s = time.perf_counter() - start
            rows.append(
                {
                    "state_mb": size_mb,
                    "files": len(manifest.files),
                    "bytes": manifest.total_bytes,
                    "plain_copy_s": round(plain_s, 3),
                    "savepoint_create_s": round(savepoint_s, 3),
                    "savepoint_over_plain": round(savepoint_s / plain_s, 2),
                    "verify_s": round(verify_s, 3),
                    "verified": verified,
                }
            )
    return {"rows": rows}
