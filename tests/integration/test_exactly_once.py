"""The example job end to end under driver crashes: exactly-once with our sink, duplicates
with Spark's own at-least-once Kafka sink (which proves the check can fail)."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef
from airflow_provider_kafkaspark.core.control.folder import ControlFolder, request_stop
from airflow_provider_kafkaspark.core.health.observe import caught_up, end_offsets
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.examples.access_events import (
    AccessEvent,
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.examples.ip_count import expected_counts, job_spec_dict
from airflow_provider_kafkaspark.spark.sink.fault_points import (
    AFTER_SINK_COMMIT,
    CRASH_AT_ENV,
    CRASH_MARKER_ENV,
    DURING_SINK_WRITE,
)
from kafkaspark_devstack.drivers import kill_driver, read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, read_all_values
from tests.integration.runtime_util import (
    committed_batches,
    start,
    wait_until,
)

EVENTS = 10_000
PER_TRIGGER = 1_500
WATERMARK_MS = 10_000


def make_input(bootstrap: str, topic: str) -> tuple[list[AccessEvent], int]:
    """Known input: seeded events, then one far-future event that closes every window."""
    events = list(generate_events(EVENTS, seed=11))
    flush_ms = max(e.event_time_ms for e in events) + 60_000
    flush = AccessEvent("255.255.255.255", flush_ms, "/flush", 200)
    create_topic(bootstrap, topic, 3)
    assert produce_events(bootstrap, topic, [*events, flush]) == EVENTS + 1
    return events, flush_ms


def drained(kafka: KafkaFacade, checkpoint: str, topic: str) -> bool:
    try:
        position = CheckpointReader(checkpoint).position()
    except Exception:  # noqa: BLE001 - not started yet
        return False
    return caught_up(position, end_offsets(kafka, [topic]))


def run_to_the_end(
    spec: dict[str, object], workdir: Path, kafka: KafkaFacade, topic: str
) -> LocalJobRef:
    checkpoint = str(spec["checkpoint_location"])
    driver = start(spec, workdir)
    wait_until(driver, "all input read", lambda: drained(kafka, checkpoint, topic), 300)
    request_stop(checkpoint, requested_by="test")
    assert wait_exit(driver, 180) == 0, read_log(driver)
    return driver


def crash_with_hook(spec: dict[str, object], workdir: Path, point: str, batch: int) -> None:
    marker = workdir / f"crashed-{point}-{batch}"
    env = {CRASH_AT_ENV: f"{point}:{batch}", CRASH_MARKER_ENV: str(marker)}
    driver = start(spec, workdir, env=env)
    code = wait_exit(driver, 300)
    assert marker.exists(), f"crash hook {point}:{batch} never fired:\n{read_log(driver)}"
    assert code == -signal.SIGKILL, f"driver exited with {code}, not killed:\n{read_log(driver)}"


def sink_counts(bootstrap: str, topic: str) -> tuple[Counter[tuple[int, str]], int]:
    """Counts per (window, ip) from a read_committed reader, and how many keys repeat."""
    counts: Counter[tuple[int, str]] = Counter()
    seen: Counter[tuple[int, str]] = Counter()
    for value in read_all_values(bootstrap, topic, 3):
        row = json.loads(value)
        key = (int(row["window_start_ms"]), str(row["ip"]))
        seen[key] += 1
        counts[key] = int(row["count"])
    duplicates = sum(n - 1 for n in seen.values() if n > 1)
    return counts, duplicates


def test_exactly_once_through_three_crashes_on_s3(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, s3_url: str
) -> None:
    """With the checkpoint on S3 (Spark through S3A, the lease and the control files through
    s3fs). On local disk the same kills are the reliability suite's `driver_kills` (random
    moments) and test_kafka_sink's crash points (these two moments, each alone)."""
    bootstrap = kafka_cluster.bootstrap_servers
    source, sink = "eo_s3_source", "eo_s3_sink"
    events, flush_ms = make_input(bootstrap, source)
    create_topic(bootstrap, sink, 3)
    checkpoint = f"{s3_url}/checkpoint"
    spec = job_spec_dict(
        bootstrap_servers=bootstrap,
        checkpoint=checkpoint,
        job_name="eo_crash",
        source_topic=source,
        sink_topic=sink,
        trigger_interval="1 second",
        max_offsets_per_trigger=PER_TRIGGER,
    )
    spec["lease_ttl_s"] = 6
    kafka = KafkaFacade({"bootstrap.servers": bootstrap})

    # 1. after the sink's Kafka commit, before Spark's commit log entry
    crash_with_hook(spec, tmp_path / "run1", AFTER_SINK_COMMIT, 1)
    assert CheckpointReader(checkpoint).position().pending_batch == 1
    # 2. during the sink write (an open transaction dies with the driver)
    crash_with_hook(spec, tmp_path / "run2", DURING_SINK_WRITE, 3)
    # 3. in the middle of a batch, at whatever point it happens to be
    driver = start(spec, tmp_path / "run3")
    wait_until(driver, "batch 4 planned", lambda: committed_batches(checkpoint) >= 4)
    kill_driver(driver)

    final = run_to_the_end(spec, tmp_path / "run4", kafka, source)
    # The killed driver's lease is taken over (at once when its holder is known to be gone
    # from this host, or once it expired) and the restarted driver says so.
    assert "took over the lease of" in read_log(final, tail=10_000)
    counts, duplicates = sink_counts(bootstrap, sink)
    expected = expected_counts(events, closed_before_ms=flush_ms - WATERMARK_MS)
    assert duplicates == 0
    assert counts == expected, f"missing {len(set(expected) - set(counts))} windows"
    assert sum(counts.values()) == EVENTS


def test_spark_at_least_once_sink_duplicates_after_the_same_crash(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    """Spark's own Kafka sink, crashed after writing a batch but before its commit log entry
    (left as such a crash leaves it: the last batch's commit file is missing, its offsets
    file and its output are there), writes the replayed batch again."""
    bootstrap = kafka_cluster.bootstrap_servers
    source, sink = "alo_source", "alo_sink"
    events, flush_ms = make_input(bootstrap, source)
    create_topic(bootstrap, sink, 3)
    checkpoint = tmp_path / "checkpoint"
    spec = job_spec_dict(
        bootstrap_servers=bootstrap,
        checkpoint=str(checkpoint),
        job_name="alo_crash",
        source_topic=source,
        sink_topic=sink,
        sink_kind="kafka",
        trigger_interval="1 second",
        max_offsets_per_trigger=PER_TRIGGER,
    )
    # Without no-data batches in this first run, every batch reads input, so the last one
    # committed at the stop has output to write again (Spark runs a no-data batch to close
    # windows when the watermark moves; the stop may land right after one). The second run
    # has them again, so the far-future event closes every window.
    no_empty_batches = {"spark.sql.streaming.noDataMicroBatches.enabled": "false"}
    driver = start({**spec, "spark_conf": no_empty_batches}, tmp_path / "run1")
    wait_until(driver, "3 batches", lambda: committed_batches(str(checkpoint)) >= 3)
    request_stop(str(checkpoint), requested_by="test")
    assert wait_exit(driver, 180) == 0, read_log(driver)
    last = committed_batches(str(checkpoint))
    progress = ControlFolder(str(checkpoint)).read_progress()
    assert progress is not None
    assert next(b.num_input_rows for b in progress.batches if b.batch_id == last) > 0
    # The state a crash right after Spark's sink wrote batch `last` leaves behind.
    (checkpoint / "commits" / str(last)).unlink()
    (checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)  # Hadoop's checksum
    run_to_the_end(spec, tmp_path / "run2", KafkaFacade({"bootstrap.servers": bootstrap}), source)
    counts, duplicates = sink_counts(bootstrap, sink)
    assert duplicates > 0, "the at-least-once sink should have written the replayed batch twice"
    expected = expected_counts(events, closed_before_ms=flush_ms - WATERMARK_MS)
    assert set(counts) == set(expected)  # nothing missing, only repeated
