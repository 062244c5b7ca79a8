"""A backfill run without Airflow: `lifecycle/backfill.run_backfill` (what the operator calls)
turns a time range into Kafka offsets, runs the job's transformation over them as a bounded
batch in a driver of its own, and replaces the interval's Parquet output on a re-run. Part
of the Spark matrix: the same file runs in each driver environment's leg."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.examples.access_events import generate_events, produce_events
from airflow_provider_kafkaspark.examples.ip_count import WINDOW_MS, job_spec_dict
from airflow_provider_kafkaspark.lifecycle.backfill import run_backfill
from kafkaspark_devstack.demo import backfill_counts
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic

EVENTS = 3_000


def test_backfill_of_an_interval_counts_its_windows_and_a_rerun_replaces_them(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = "backfill_source"
    events = list(generate_events(EVENTS, seed=7))
    create_topic(bootstrap, topic, 3)
    assert produce_events(bootstrap, topic, events) == EVENTS
    times = sorted(e.event_time_ms for e in events)
    # Whole windows from the middle of the input: [start, end) on window boundaries.
    start = times[EVENTS // 4] - times[EVENTS // 4] % WINDOW_MS
    end = start + 4 * WINDOW_MS
    expected: Counter[tuple[int, str]] = Counter(
        (e.event_time_ms - e.event_time_ms % WINDOW_MS, e.ip)
        for e in events
        if start <= e.event_time_ms < end
    )
    assert sum(expected.values()) > 0 and len({w for w, _ in expected}) == 4
    spec = JobSpec.from_dict(
        job_spec_dict(
            bootstrap_servers=bootstrap,
            checkpoint=str(tmp_path / "unused"),
            job_name="backfill",
            source_topic=topic,
            sink_topic="unused",
        )
    )
    output_root = str(tmp_path / "backfill")

    def backfill() -> dict[str, object]:
        return run_backfill(
            spec,
            kafka_config={"bootstrap.servers": bootstrap},
            start_ms=start,
            end_ms=end,
            output_root=output_root,
            master="local[2]",
            timeout_s=300,
        )

    first = backfill()
    assert first["records"] == sum(expected.values())
    assert backfill_counts(Path(str(first["output"]))) == expected
    again = backfill()
    assert again["output"] == first["output"]
    assert backfill_counts(Path(str(again["output"]))) == expected
    assert [p.name for p in Path(output_root).iterdir()] == [f"interval={start}-{end}"]
