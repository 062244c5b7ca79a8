"""The README demo: the example job on a real local Kafka broker and Spark, end to end.

1. start a local Kafka broker (KRaft) and produce seeded web access events;
2. submit the example job (requests per IP per 5-second window) as a managed driver with
   the exactly-once Kafka sink, and print its progress per batch;
3. stop it gracefully through the control folder and keep a savepoint;
4. read the sink topic with `read_committed` and check every window against the counts
   expected from the input: duplicates and missing windows are counted, both should be 0.

Run with `make demo` (sets everything up first) or `python -m airflow_provider_kafkaspark.demo`.
Everything lives in a temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.examples.access_events import (
    SINK_TOPIC,
    SOURCE_TOPIC,
    AccessEvent,
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.examples.ip_count import expected_counts, job_spec_dict

WATERMARK_MS = 10_000


def _say(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def read_sink(bootstrap: str, topic: str, partitions: int) -> list[dict[str, Any]]:
    """Every committed record of the sink topic (read_committed, up to partition EOF)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kafkaspark-demo-reader",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    rows: list[dict[str, Any]] = []
    at_end: set[int | None] = set()
    deadline = time.monotonic() + 120
    try:
        while len(at_end) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                continue
            rows.append(json.loads(msg.value() or b"{}"))
    finally:
        consumer.close()
    return rows


def run(events: int, partitions: int, workdir: Path) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, NewTopic

    from airflow_provider_kafkaspark.core.checkpoint import CheckpointReader
    from airflow_provider_kafkaspark.core.control import ControlFolder
    from airflow_provider_kafkaspark.core.jobspec import JobSpec
    from airflow_provider_kafkaspark.core.kafka_admin import KafkaFacade
    from airflow_provider_kafkaspark.core.observe import caught_up, end_offsets
    from airflow_provider_kafkaspark.core.savepoint import SavepointStore
    from airflow_provider_kafkaspark.local.jobs import (
        read_log,
        request_stop,
        start_local_job,
        wait_exit,
    )
    from airflow_provider_kafkaspark.local.kafka import LocalKafkaCluster
    from airflow_provider_kafkaspark.versions import SPARK_VERSION

    _say("starting a local Kafka broker (KRaft mode)")
    with LocalKafkaCluster(workdir / "kafka") as cluster:
        bootstrap = cluster.bootstrap_servers
        _say(f"Kafka is up at {bootstrap}")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = [NewTopic(SOURCE_TOPIC, partitions, 1), NewTopic(SINK_TOPIC, partitions, 1)]
        for future in admin.create_topics(topics).values():
            future.result()
        input_events = list(generate_events(events))
        flush_ms = max(e.event_time_ms for e in input_events) + 60_000
        # One far-future event moves the watermark past every window of the input.
        flush = AccessEvent("255.255.255.255", flush_ms, "/flush", 200)
        produced = produce_events(bootstrap, SOURCE_TOPIC, [*input_events, flush])
        _say(f"produced {produced} access events to {SOURCE_TOPIC} ({partitions} partitions)")

        checkpoint = str(workdir / "checkpoint")
        spec = JobSpec.from_dict(
            job_spec_dict(
                bootstrap_servers=bootstrap,
                checkpoint=checkpoint,
                max_offsets_per_trigger=max(500, events // 5),
            )
        )
        driver = start_local_job(spec, workdir / "driver")
        _say(f"submitted job {spec.job_name}: driver pid {driver.pid}, log {driver.log_file}")
        kafka = KafkaFacade({"bootstrap.servers": bootstrap})
        control = ControlFolder(checkpoint)
        shown = -1
        deadline = time.monotonic() + 600
        while True:
            if not driver.is_alive():
                raise RuntimeError(f"the driver exited early:\n{read_log(driver)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the job did not catch up in time:\n{read_log(driver)}")
            progress = control.read_progress()
            for batch in progress.batches if progress else ():
                if batch.batch_id > shown:
                    shown = batch.batch_id
                    _say(
                        f"batch {batch.batch_id}: {batch.num_input_rows} rows, "
                        f"{batch.processed_rows_per_second:.0f} rows/s, "
                        f"end offsets {json.dumps(batch.end_offsets, sort_keys=True)}"
                    )
            try:
                position = CheckpointReader(checkpoint).position()
            except Exception:  # noqa: BLE001 - the checkpoint is not written yet
                position = None
            if position and caught_up(position, end_offsets(kafka, [SOURCE_TOPIC])):
                break
            time.sleep(1)

        _say("caught up: asking the driver to stop gracefully")
        request_stop(checkpoint, requested_by="demo", reason="end of demo")
        code = wait_exit(driver, 180)
        stopped = control.read_stopped()
        if code != 0 or stopped is None:
            raise RuntimeError(f"the driver did not stop cleanly ({code}):\n{read_log(driver)}")
        _say(
            f"stopped: last planned batch {stopped.last_planned_batch}, last committed "
            f"{stopped.last_committed_batch}, clean={stopped.clean}"
        )
        store = SavepointStore(str(workdir / "savepoints"))
        savepoint = store.create(checkpoint, job_name=spec.job_name, spark_version=SPARK_VERSION)
        _say(
            f"savepoint {savepoint.savepoint_id}: {len(savepoint.files)} files, verified="
            f"{store.verify(savepoint.savepoint_id).ok}"
        )

        lag_group = kafka.group_offsets(spec.effective_lag_group or "")
        rows = read_sink(bootstrap, SINK_TOPIC, partitions)
        seen: Counter[tuple[int, str]] = Counter()
        got: dict[tuple[int, str], int] = {}
        for row in rows:
            key = (int(row["window_start_ms"]), str(row["ip"]))
            seen[key] += 1
            got[key] = int(row["count"])
        expected = expected_counts(input_events, closed_before_ms=flush_ms - WATERMARK_MS)
    return {
        "events_produced": produced,
        "batches": (stopped.last_committed_batch or 0) + 1,
        "windows_expected": len(expected),
        "windows_written": len(got),
        "records_counted": sum(got.values()),
        "duplicates": sum(n - 1 for n in seen.values()),
        "missing": len(set(expected) - set(got)),
        "wrong_counts": sum(1 for k, v in expected.items() if k in got and got[k] != v),
        "savepoint": savepoint.savepoint_id,
        "lag_group_matches_checkpoint": lag_group
        == CheckpointReader(checkpoint).position().committed_offsets,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kafkaspark-demo-") as tmp:
        summary = run(args.events, args.partitions, Path(tmp))
    _say("summary: " + json.dumps(summary, indent=2))
    ok = (
        summary["duplicates"] == 0
        and summary["missing"] == 0
        and summary["wrong_counts"] == 0
        and summary["records_counted"] == args.events
    )
    if not ok:
        _say("the output does not match the input: see the summary above")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
