"""Savepoint create, verify and restore on a real S3 server (SeaweedFS) against local disk.

For each state size the same synthetic checkpoint (`synthetic_checkpoint.write_checkpoint`)
is put on local disk and, untimed, copied to a bucket on a `weed mini` started on loopback
(`LocalS3Server`). Each repeat then times, for each storage, with both ends on that storage
(local -> local, S3 -> S3):

- `create`: `SavepointStore.create` of the checkpoint (read, checksum, write, manifest);
- `verify`: `SavepointStore.verify` of that savepoint (list, re-read and checksum every file);
- `restore`: `restore(..., "checkpoint")` into a fresh, empty location. It verifies the
  savepoint again before it copies, so it holds one more `verify` than the copy itself.

The order alternates: local first on even repeats, S3 first on odd ones. Figures per size are
the median seconds of each step and storage, the S3/local ratio of each median (taken within
this run) and the per-repeat figures. S3 is reached through fsspec/s3fs with the standard AWS
variables, set for the run and put back afterwards.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from synthetic_checkpoint import write_checkpoint

from airflow_provider_kafkaspark.core.state.restore import restore
from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore
from airflow_provider_kafkaspark.core.storage.location import open_location
from kafkaspark_devstack.s3 import LocalS3Server

BUCKET = "kafkaspark-bench"
STORAGES = ("local", "s3")
STEPS = ("create", "verify", "restore")


@contextmanager
def _aws_env(server: LocalS3Server) -> Iterator[None]:
    """The standard AWS variables for `server`, then the previous values back."""
    with mock.patch.dict(os.environ, server.aws_environment()):
        try:
            yield
        finally:
            # s3fs caches file system instances; none made with these credentials may
            # outlive the server.
            import s3fs

            s3fs.S3FileSystem.clear_instance_cache()


def _put_checkpoint(local: Path, url: str) -> None:
    """Copy a local checkpoint folder to `url` (untimed), and check that every file arrived
    whole."""
    source = open_location(str(local))
    target = open_location(url)
    target.fs.put(str(local).rstrip("/") + "/", target.root + "/", recursive=True)
    target.fs.invalidate_cache()
    sent = dict(source.walk_files())
    arrived = dict(target.walk_files())
    if sent != arrived:
        missing = sorted(set(sent.items()) ^ set(arrived.items()))
        raise RuntimeError(f"copy of {local} to {url} differs: {missing[:5]}")


def _one(
    store: SavepointStore, checkpoint: str, target: str, savepoint_id: str
) -> tuple[dict[str, float], int, int]:
    """(seconds of create, verify, restore; files; bytes) of one savepoint round trip."""
    start = time.perf_counter()
    manifest = store.create(checkpoint, job_name="bench", savepoint_id=savepoint_id)
    create_s = time.perf_counter() - start
    start = time.perf_counter()
    verified = store.verify(manifest.savepoint_id)
    verify_s = time.perf_counter() - start
    if not verified.ok:
        raise RuntimeError(f"savepoint {savepoint_id} did not verify: {verified.problems[:3]}")
    start = time.perf_counter()
    result = restore(store, manifest.savepoint_id, target, "checkpoint")
    restore_s = time.perf_counter() - start
    if result.files != len(manifest.files):
        raise RuntimeError(
            f"restore of {savepoint_id}: {result.files} files, not {len(manifest.files)}"
        )
    seconds = {"create": create_s, "verify": verify_s, "restore": restore_s}
    return seconds, len(manifest.files), manifest.total_bytes


def _progress(text: str) -> None:
    print(f"storage_s3: {text}", file=sys.stderr, flush=True)


def run(sizes_mb: str = "1,16,128", repeats: int = 3) -> dict[str, Any]:
    sizes = [int(s) for s in str(sizes_mb).split(",") if s.strip()]
    repeats = int(repeats)
    if repeats < 1:
        raise ValueError(f"repeats must be 1 or more, got {repeats}")
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="kafkaspark-bench-") as tmp,
        LocalS3Server(Path(tmp) / "s3") as server,
        _aws_env(server),
    ):
        server.create_bucket(BUCKET)
        for size_mb in sizes:
            local_cp = write_checkpoint(
                Path(tmp) / f"cp-{size_mb}",
                batches=100,
                partitions=10,
                state_bytes=size_mb * 1_000_000,
            )
            s3_root = f"s3://{BUCKET}/{size_mb}mb"
            _put_checkpoint(local_cp, f"{s3_root}/checkpoint")
            places = {
                "local": (
                    SavepointStore(str(Path(tmp) / f"sp-{size_mb}")),
                    str(local_cp),
                    str(Path(tmp) / f"restored-{size_mb}"),
                ),
                "s3": (
                    SavepointStore(f"{s3_root}/savepoints"),
                    f"{s3_root}/checkpoint",
                    f"{s3_root}/restored",
                ),
            }
            per_repeat = []
            counts: dict[str, tuple[int, int]] = {}
            for rep in range(repeats):
                order = STORAGES if rep % 2 == 0 else STORAGES[::-1]
                figures: dict[str, Any] = {"repeat": rep, "order": list(order)}
                for storage in order:
                    store, checkpoint, restored = places[storage]
                    seconds, files, size = _one(
                        store, checkpoint, f"{restored}/r{rep}", f"bench-{size_mb}mb-r{rep}"
                    )
                    counts[storage] = (files, size)
                    figures[storage] = {f"{step}_s": round(seconds[step], 6) for step in STEPS}
                per_repeat.append(figures)
                _progress(
                    f"{size_mb} MB, repeat {rep + 1}/{repeats} ({' then '.join(order)}): "
                    + "; ".join(
                        f"{storage} "
                        + " ".join(f"{step} {figures[storage][f'{step}_s']:.3f}s" for step in STEPS)
                        for storage in STORAGES
                    )
                )
            if counts["local"] != counts["s3"]:
                raise RuntimeError(
                    f"{size_mb} MB: local savepoint has {counts['local']} (files, bytes), "
                    f"S3 has {counts['s3']}"
                )
            medians = {
                storage: {
                    step: statistics.median(r[storage][f"{step}_s"] for r in per_repeat)
                    for step in STEPS
                }
                for storage in STORAGES
            }
            rows.append(
                {
                    "state_mb": size_mb,
                    "files": counts["local"][0],
                    "bytes": counts["local"][1],
                    **{
                        f"median_{storage}": {
                            f"{step}_s": round(medians[storage][step], 4) for step in STEPS
                        }
                        for storage in STORAGES
                    },
                    "s3_over_local": {
                        step: round(medians["s3"][step] / medians["local"][step], 2)
                        for step in STEPS
                    },
                    "repeats": per_repeat,
                }
            )
    return {"repeats": repeats, "rows": rows}
