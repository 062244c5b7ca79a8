"""A driver paused past its lease's expiry, with its checkpoint on the real S3 server: another
driver takes the lease over, runs and stops (releasing the lease), then the paused one
resumes. Its next renewal is fenced (conditional on the version it last wrote), so it stops
its query and exits (6, final) without writing the lease back or over the other driver's
stopped report. Before the fence, the resumed driver re-created the lease and carried on."""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import asdict, replace
from datetime import datetime
from pathlib import Path

from airflow_provider_kafkaspark.core.control.folder import ControlFolder, request_stop
from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from kafkaspark_devstack.drivers import read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.integration.runtime_util import committed_batches, start, wait_until

TTL_S = 6


def test_a_paused_driver_cannot_renew_a_lease_taken_over_and_released(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, s3_url: str
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = "lease_fencing"
    create_topic(bootstrap, topic, 2)
    produce_numbered(bootstrap, topic, 2_000)
    checkpoint = f"{s3_url}/checkpoint"
    spec = {
        "job_name": "fenced",
        "source": {
            "bootstrap_servers": bootstrap,
            "subscribe": [topic],
            "max_offsets_per_trigger": 200,
        },
        "sql": "SELECT partition, offset, CAST(value AS STRING) AS value FROM source",
        "sink": {"kind": "parquet", "path": f"{s3_url}/out"},
        "checkpoint_location": checkpoint,
        "trigger_interval": "1 second",
        "lease_ttl_s": TTL_S,
    }
    control = ControlFolder(checkpoint)

    paused = start(spec, tmp_path / "paused")
    wait_until(paused, "a committed batch", lambda: committed_batches(checkpoint) >= 1, 240)
    first = control.read_lease()
    assert first is not None
    # The whole driver pauses: its Python process, its JVM and its Python workers.
    os.killpg(paused.pid, signal.SIGSTOP)
    try:
        time.sleep(TTL_S + 2)
        produce_numbered(bootstrap, topic, 400, start=2_000)
        other = start(spec, tmp_path / "other")
        wait_until(
            other,
            "the other driver's lease",
            lambda: (
                (lease := control.read_lease()) is not None and lease.owner_id != first.owner_id
            ),
            240,
        )
        taken = committed_batches(checkpoint)
        wait_until(
            other, "a batch by the other driver", lambda: committed_batches(checkpoint) > taken
        )
        request_stop(checkpoint, requested_by="test", reason="fencing test")
        assert wait_exit(other, 180) == 0, read_log(other)
        report = control.read_stopped()
        assert report is not None and report.owner_id != first.owner_id
        assert control.read_lease() is None
        position = CheckpointReader(checkpoint).position()
    finally:
        resumed_at, resumed_wall = time.monotonic(), time.time()
        os.killpg(paused.pid, signal.SIGCONT)

    code = wait_exit(paused, 120)
    exited_after_s = time.monotonic() - resumed_at
    log = Path(paused.log_file).read_text(errors="replace")
    assert code == 6, log  # fenced, and final: no restart takes the stopped job back
    assert "lease lost" in log and "the lease was taken over" in log, log
    # Nothing of the resumed driver's reached the control folder or the checkpoint.
    assert control.read_lease() is None, log
    after = control.read_stopped()
    assert after is not None and after.owner_id == report.owner_id, log
    assert CheckpointReader(checkpoint).position().latest_committed == position.latest_committed
    lost_line = next(line for line in log.splitlines() if "lease lost" in line)
    lost_wall = datetime.strptime(lost_line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    print(
        f"fenced: lease lost {lost_wall - resumed_wall:.3f}s after SIGCONT, "
        f"driver exited after {exited_after_s:.1f}s"
    )


def test_a_fresh_lease_of_a_holder_on_another_node_is_waited_out_not_refused(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    # A driver died on another node a moment ago: its lease looks fresh and no pid can be
    # checked from here. The new driver waits for the lease to stay unchanged for its ttl
    # (its own clock) and takes it over; before, it exited 3 at once (a lost YARN attempt).
    bootstrap = kafka_cluster.bootstrap_servers
    topic = "lease_elsewhere"
    create_topic(bootstrap, topic, 1)
    produce_numbered(bootstrap, topic, 100)
    checkpoint = str(tmp_path / "checkpoint")
    spec = {
        "job_name": "elsewhere",
        "source": {"bootstrap_servers": bootstrap, "subscribe": [topic]},
        "sql": "SELECT partition, offset, CAST(value AS STRING) AS value FROM source",
        "sink": {"kind": "parquet", "path": str(tmp_path / "out")},
        "checkpoint_location": checkpoint,
        "trigger_interval": "1 second",
        "lease_ttl_s": TTL_S,
    }
    # Fresh when the driver, some seconds after its start, first reads it.
    dead = Lease.new("elsewhere", ttl_ms=30_000)
    dead = replace(dead, host="another-node", pid=1, application_id="application_9_0001")
    ControlFolder(checkpoint).location.write_atomic(json.dumps(asdict(dead)), "lease.json")
    driver = start(spec, tmp_path / "run")
    wait_until(driver, "a committed batch", lambda: committed_batches(checkpoint) >= 0, 240)
    log = Path(driver.log_file).read_text(errors="replace")
    assert "took over the lease of driver" in log and "another-node" in log, log
    request_stop(checkpoint, requested_by="test", reason="done")
    assert wait_exit(driver, 120) == 0, read_log(driver)
