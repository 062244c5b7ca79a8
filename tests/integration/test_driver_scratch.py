"""A local driver with state on S3 copies no jars into the temp folder, and a killed driver's
temporary files are gone once the same job starts again. Real drivers, a real broker and a
real S3 server (whose data, like the broker's, is under pytest's own folder, not counted)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from airflow_provider_kafkaspark.core.control.folder import request_stop
from kafkaspark_devstack.drivers import kill_driver, read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.integration.runtime_util import committed_batches, start, wait_until

MB = 1024 * 1024
# What a Spark driver, its JVM and Hadoop write to the temp folder: Spark's folders (its
# fetched jars among them), native libraries, Hadoop's buffers, this package's scratch
# folders. Other files there (other people's, the S3 server's logs) are not the driver's.
DRIVER_TEMP = (
    "spark-",
    "blockmgr-",
    "snappy-",
    "liblz4",
    "libzstd",
    "libnetty",
    "hadoop-",
    f"kafkaspark-{os.getuid()}",
)


def group_pids(pgid: int) -> set[str]:
    """The processes of a driver's group (Python, its JVM, Python workers)."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.getpgid(int(entry.name)) == pgid:
                found.add(entry.name)
        except OSError:
            pass
    return found


def temp_files(pids: set[str]) -> dict[str, int]:
    """The driver-made files under the temp folder and their sizes; a JVM's perf-data file
    counts when its pid is one of `pids`."""
    root = Path(tempfile.gettempdir())
    found: dict[str, int] = {}
    for top in root.iterdir():
        if top.name.startswith("hsperfdata_"):
            paths = [p for p in top.iterdir() if p.name in pids]
        elif top.name.startswith(DRIVER_TEMP):
            paths = [top, *top.rglob("*")] if top.is_dir() else [top]
        else:
            continue
        for path in paths:
            try:
                if not path.is_dir():
                    found[str(path)] = path.lstat().st_size
            except OSError:  # removed while walking
                pass
    return found


def added_mb(before: dict[str, int], pids: set[str]) -> tuple[float, list[str]]:
    now = temp_files(pids)
    new = sorted(p for p in now if p not in before)
    return sum(now[p] for p in new) / MB, new


def test_a_driver_copies_no_jars_and_a_killed_ones_files_are_reaped(
    kafka_cluster: LocalKafkaCluster, s3_url: str, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, "driver_scratch", 1)
    produce_numbered(bootstrap, "driver_scratch", 100)
    checkpoint = f"{s3_url}/checkpoint"
    spec = {
        "job_name": "driver-scratch",
        "source": {"bootstrap_servers": bootstrap, "subscribe": ["driver_scratch"]},
        "sql": "SELECT CAST(value AS STRING) AS value FROM source",
        "sink": {"kind": "parquet", "path": f"{s3_url}/out"},
        "checkpoint_location": checkpoint,
        "trigger_interval": "1 second",
    }
    before = temp_files(set())
    first = start(spec, tmp_path / "run1")
    try:
        wait_until(first, "a committed batch", lambda: committed_batches(checkpoint) >= 0)
        pids = group_pids(first.pid)
        grown, _ = added_mb(before, pids)
    finally:
        kill_driver(first)
    print(f"temp folder growth of a running driver: {grown:.1f} MB")
    # Was 543 MB: the S3A and connector jars fetched into Spark's userFiles folder.
    assert grown < 50, f"a running driver added {grown:.1f} MB to {tempfile.gettempdir()}"

    left_mb, left = added_mb(before, pids)
    print(f"left by the killed driver: {left_mb:.1f} MB in {len(left)} files")
    assert left, "the killed driver left nothing to reap: the test checks nothing"

    second = start(spec, tmp_path / "run2")
    try:
        produce_numbered(bootstrap, "driver_scratch", 10)
        wait_until(second, "the next driver's batch", lambda: committed_batches(checkpoint) >= 1)
        second_pids = group_pids(second.pid)
        now = temp_files(pids)
        kept = [p for p in left if p in now]
        assert not kept, f"the killed driver's files outlived the next start: {kept[:10]}"
        request_stop(checkpoint, requested_by="test", reason="done")
        assert wait_exit(second, 180) == 0, read_log(second)
    finally:
        kill_driver(second)
    gone_mb, still = added_mb(before, pids | second_pids)
    # A clean exit leaves nothing either (the JVM's own perf-data file is removed by it).
    assert not still, f"{gone_mb:.1f} MB left after a clean stop: {still[:10]}"
