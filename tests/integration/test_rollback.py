"""A rollback with real drivers and the exactly-once sink: a savepoint, a run past it that
writes windows, then the savepoint restored over that run's checkpoint (as the restart
window's rollback does). The batches after the savepoint are planned again under their old
ids with other offsets; the restored copy runs as a new query, so they are written again
rather than taken for written (`core/state/restore.ran_past_savepoint`)."""

from __future__ import annotations

from pathlib import Path

from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.examples.access_events import (
    AccessEvent,
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.examples.ip_count import expected_counts, job_spec_dict
from airflow_provider_kafkaspark.lifecycle.restore import restore_for_submit
from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic
from tests.integration.test_exactly_once import WATERMARK_MS, run_to_the_end, sink_counts

EVENTS = 6_000


def test_a_rollback_past_written_batches_loses_no_window(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    source, sink = "rollback_source", "rollback_sink"
    events = list(generate_events(EVENTS, seed=31))
    thirds = [
        events[: EVENTS // 3],
        events[EVENTS // 3 : 2 * EVENTS // 3],
        events[2 * EVENTS // 3 :],
    ]
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 3)
    checkpoint = str(tmp_path / "checkpoint")
    savepoints = str(tmp_path / "savepoints")
    raw_spec = job_spec_dict(
        bootstrap_servers=bootstrap,
        checkpoint=checkpoint,
        job_name="rollback",
        source_topic=source,
        sink_topic=sink,
        trigger_interval="1 second",
        max_offsets_per_trigger=1_000,
    )
    kafka = KafkaFacade({"bootstrap.servers": bootstrap})

    assert produce_events(bootstrap, source, thirds[0]) == len(thirds[0])
    run_to_the_end(raw_spec, tmp_path / "run1", kafka, source)
    savepoint = savepoint_after_stop(checkpoint, savepoints, "rollback", spark_version=None)
    written_before = sum(sink_counts(bootstrap, sink)[0].values())

    # The run that is rolled back (an upgrade, here of its batch size): past the savepoint,
    # it writes windows of its own, in batches that cut the input elsewhere than the
    # rolled-back job's batches of the same ids will.
    assert produce_events(bootstrap, source, thirds[1]) == len(thirds[1])
    upgraded = {**raw_spec, "source": {**raw_spec["source"], "max_offsets_per_trigger": 250}}  # type: ignore[dict-item]
    run_to_the_end(upgraded, tmp_path / "run2", kafka, source)
    ran_to = CheckpointReader(checkpoint).position().latest_committed
    assert ran_to is not None and savepoint.last_committed_batch is not None
    assert ran_to > savepoint.last_committed_batch
    assert sum(sink_counts(bootstrap, sink)[0].values()) > written_before

    spec, summary = restore_for_submit(
        JobSpec.from_dict(raw_spec),
        savepoint_root=savepoints,
        savepoint_ref=savepoint.savepoint_id,
        mode="checkpoint",
        kafka_config={"bootstrap.servers": bootstrap},
    )
    assert summary["new_query_id"] not in (None, savepoint.query_id), summary
    flush_ms = max(e.event_time_ms for e in events) + 60_000
    flush = AccessEvent("255.255.255.255", flush_ms, "/flush", 200)
    assert produce_events(bootstrap, source, [*thirds[2], flush]) == len(thirds[2]) + 1
    run_to_the_end(spec.to_dict(), tmp_path / "run3", kafka, source)

    counts, duplicates = sink_counts(bootstrap, sink)
    expected = expected_counts(events, closed_before_ms=flush_ms - WATERMARK_MS)
    # Every window, with the count the input implies: none skipped as written.
    assert counts == expected, f"missing {len(set(expected) - set(counts))} windows"
    # What the rolled-back run wrote after the savepoint is written again.
    assert duplicates > 0
