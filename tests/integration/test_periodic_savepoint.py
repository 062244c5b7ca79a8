"""A periodic savepoint of a running stateful job (the ip_count example) restores as a
savepoint taken after a stop at the same batch does: the job is savepointed while it runs,
idle after reading a known input, then stopped with a savepoint at that same batch; each is
restored into a fresh checkpoint with its own sink, fed the same new records, and both write
the same windows. Together with what the original run wrote, the windows are the input's,
each once (exactly-once sink, read_committed readers)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
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
from airflow_provider_kafkaspark.lifecycle.savepoint import savepoint_of_running
from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop, stop_job
from kafkaspark_devstack.drivers import read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic
from tests.integration.runtime_util import start, wait_until
from tests.integration.test_exactly_once import WATERMARK_MS, drained, run_to_the_end, sink_counts

EVENTS = 4_000
IDLE_S = 6.0


def settled(checkpoint: str) -> Callable[[], bool]:
    """True once the checkpoint has no batch in flight and its last committed batch has not
    moved for `IDLE_S` (a no-data batch that moves the watermark has run, if any)."""
    last: list[object] = [None, time.monotonic()]

    def check() -> bool:
        position = CheckpointReader(checkpoint).position()
        now = (position.latest_committed, position.latest_planned)
        if now != last[0]:
            last[:] = [now, time.monotonic()]
            return False
        idle = position.latest_planned == position.latest_committed
        return idle and time.monotonic() - float(last[1]) >= IDLE_S  # type: ignore[arg-type]

    return check


@pytest.mark.parametrize(
    "storage",
    [pytest.param("local", marks=pytest.mark.extended(covered_by="the s3 case")), "s3"],
)
def test_a_periodic_savepoint_restores_as_the_stop_savepoint_of_the_same_batch(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, request: pytest.FixtureRequest, storage: str
) -> None:
    base = str(tmp_path) if storage == "local" else str(request.getfixturevalue("s3_url"))
    bootstrap = kafka_cluster.bootstrap_servers
    job = f"periodic_{storage}"
    source, sink = f"{job}_source", f"{job}_sink"
    events = list(generate_events(EVENTS, seed=47))
    first, second = events[: EVENTS // 2], events[EVENTS // 2 :]
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 3)
    assert produce_events(bootstrap, source, first) == len(first)
    checkpoint, savepoints = f"{base}/checkpoint", f"{base}/savepoints"
    raw_spec = job_spec_dict(
        bootstrap_servers=bootstrap,
        checkpoint=checkpoint,
        job_name=job,
        source_topic=source,
        sink_topic=sink,
        trigger_interval="1 second",
        max_offsets_per_trigger=1_000,
    )
    kafka = KafkaFacade({"bootstrap.servers": bootstrap})

    driver = start(raw_spec, tmp_path / "run1")
    wait_until(driver, "first half read", lambda: drained(kafka, checkpoint, source), 300)
    wait_until(driver, "the job idle", settled(checkpoint), 120)
    running, _ = savepoint_of_running(checkpoint, savepoints, job)
    assert running.of_running and pid_alive(driver.pid), read_log(driver)
    report = stop_job(
        checkpoint, requested_by="test", reason="after the periodic savepoint", drain_timeout_s=60
    )
    assert report is not None and report.clean, read_log(driver)
    assert wait_exit(driver, 60) == 0, read_log(driver)
    stopped = savepoint_after_stop(checkpoint, savepoints, job, spark_version=None)
    # The same batch, the same offsets: nothing came in between.
    assert running.last_committed_batch == stopped.last_committed_batch, (running, stopped)
    assert running.offsets == stopped.offsets
    assert sum(running.offsets[source].values()) == len(first)
    before, duplicates = sink_counts(bootstrap, sink)
    assert duplicates == 0

    flush_ms = max(e.event_time_ms for e in events) + 60_000
    flush = AccessEvent("255.255.255.255", flush_ms, "/flush", 200)
    assert produce_events(bootstrap, source, [*second, flush]) == len(second) + 1
    outputs = {}
    for name, savepoint in (("from_running", running), ("from_stop", stopped)):
        # Its own job name (the exactly-once sink's markers are per job), checkpoint and sink.
        restored_sink = f"{job}_{name}_sink"
        create_topic(bootstrap, restored_sink, 3)
        restored = job_spec_dict(
            bootstrap_servers=bootstrap,
            checkpoint=f"{base}/{name}",
            job_name=f"{job}_{name}",
            source_topic=source,
            sink_topic=restored_sink,
            trigger_interval="1 second",
            max_offsets_per_trigger=1_000,
        )
        spec, summary = restore_for_submit(
            JobSpec.from_dict(restored),
            savepoint_root=savepoints,
            savepoint_ref=savepoint.savepoint_id,
            mode="checkpoint",
            kafka_config={"bootstrap.servers": bootstrap},
        )
        assert summary["savepoint_id"] == savepoint.savepoint_id
        assert "backup" not in summary and "new_query_id" not in summary
        run_to_the_end(spec.to_dict(), tmp_path / name, kafka, source)
        outputs[name] = sink_counts(bootstrap, restored_sink)

    (from_running, dup_running), (from_stop, dup_stop) = (
        outputs["from_running"],
        outputs["from_stop"],
    )
    assert dup_running == dup_stop == 0
    assert from_running, "the restored job wrote no window"
    assert from_running == from_stop
    # Nothing lost and nothing counted twice: the windows of the whole input.
    expected = expected_counts(events, closed_before_ms=flush_ms - WATERMARK_MS)
    assert not set(before) & set(from_running)
    assert {**before, **from_running} == expected
