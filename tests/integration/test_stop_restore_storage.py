"""A restart window on S3, with real drivers: stop (no pid), savepoint, partitions added while
the job is down, restore over the old checkpoint (kept aside), resume; every window exactly
once. The checkpoint (written by Spark through S3A), the control folder, the savepoints and
the backup all live on the session's real S3 server. The same story on local disk is the
reliability suite's `partitions_added` and `repeated_restores` scenarios."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka.admin import AdminClient, NewPartitions

from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.storage.location import open_location
from airflow_provider_kafkaspark.examples.access_events import (
    AccessEvent,
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.examples.ip_count import expected_counts, job_spec_dict
from airflow_provider_kafkaspark.lifecycle.restore import restore_for_submit
from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop, stop_job
from kafkaspark_devstack.drivers import read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic
from tests.integration.runtime_util import start, wait_until
from tests.integration.test_exactly_once import WATERMARK_MS, drained, run_to_the_end, sink_counts

EVENTS = 6_000


def test_stop_savepoint_partitions_added_restore_resume_on_s3(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, s3_url: str
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    storage_base, suffix = s3_url, "s3"
    source, sink = f"window_{suffix}_source", f"window_{suffix}_sink"
    events = list(generate_events(EVENTS, seed=23))
    first, second = events[: EVENTS // 2], events[EVENTS // 2 :]
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 3)
    assert produce_events(bootstrap, source, first) == len(first)
    checkpoint = f"{storage_base}/checkpoint"
    savepoints = f"{storage_base}/savepoints"
    raw_spec = job_spec_dict(
        bootstrap_servers=bootstrap,
        checkpoint=checkpoint,
        job_name=f"window_{suffix}",
        source_topic=source,
        sink_topic=sink,
        trigger_interval="1 second",
        max_offsets_per_trigger=1_500,
    )
    kafka = KafkaFacade({"bootstrap.servers": bootstrap})

    driver = start(raw_spec, tmp_path / "run1")
    wait_until(driver, "first half read", lambda: drained(kafka, checkpoint, source), 300)
    report = stop_job(checkpoint, requested_by="test", reason="restart window", drain_timeout_s=60)
    assert report is not None and report.clean, read_log(driver)
    assert wait_exit(driver, 60) == 0, read_log(driver)
    manifest = savepoint_after_stop(
        checkpoint, savepoints, str(raw_spec["job_name"]), spark_version=None
    )
    assert sum(manifest.offsets[source].values()) == len(first)

    # While the job is down: two partitions more, and the rest of the input (some of it in
    # the new partitions), then an event far in the future that closes every window.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(source, 4)])[source].result(timeout=60)
    flush_ms = max(e.event_time_ms for e in events) + 60_000
    flush = AccessEvent("255.255.255.255", flush_ms, "/flush", 200)
    assert produce_events(bootstrap, source, [*second, flush]) == len(second) + 1

    spec, summary = restore_for_submit(
        JobSpec.from_dict(raw_spec),
        savepoint_root=savepoints,
        savepoint_ref="latest",
        mode="checkpoint",
        kafka_config={"bootstrap.servers": bootstrap},
    )
    assert summary["savepoint_id"] == manifest.savepoint_id
    # The checkpoint that was there is kept aside, whole, on the same storage.
    backup = open_location(summary["backup"])
    assert backup.url.startswith(storage_base) and backup.exists("commits")
    run_to_the_end(spec.to_dict(), tmp_path / "run2", kafka, source)

    counts, duplicates = sink_counts(bootstrap, sink)
    expected = expected_counts(events, closed_before_ms=flush_ms - WATERMARK_MS)
    assert duplicates == 0
    assert counts == expected, f"missing {len(set(expected) - set(counts))} windows"
    assert sum(counts.values()) == EVENTS
