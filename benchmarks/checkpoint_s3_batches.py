"""Batch time of the example job with its checkpoint on S3 against local disk.

The example job (`examples/ip_count`: windowed counts, state, the exactly-once Kafka sink)
runs in a real driver against a local Kafka broker, once with its checkpoint in a local
folder and once on a local S3 server (SeaweedFS, reached through S3A; the driver gets the
standard AWS variables). Each run reads the same input from its start, `per_trigger` records
a batch, until it has read everything, and stops. Figures per storage: the mean and median
of Spark's own per-batch durations (`triggerExecution`, and its `walCommit` and
`commitOffsets` parts, which are the checkpoint writes) over the batches with input, the
first `warmup` left out. Runs alternate (local first on even repeats); the S3/local ratios
are taken within this run. Timings are reported, never asserted.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

from airflow_provider_kafkaspark.backends.local_driver import start_local_job
from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from airflow_provider_kafkaspark.core.control.folder import ControlFolder, request_stop
from airflow_provider_kafkaspark.core.health.observe import caught_up, end_offsets
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.examples.access_events import generate_events, produce_events
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from kafkaspark_devstack.drivers import read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import LocalS3Server

BUCKET = "kafkaspark-bench"
SOURCE = "bench_s3_source"
PARTS = ("triggerExecution", "walCommit", "commitOffsets")


def _run_once(
    bootstrap: str, checkpoint: str, sink: str, workdir: Path, per_trigger: int
) -> list[dict[str, int]]:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(sink, 3, 1)])[sink].result(60)
    spec = job_spec_dict(
        bootstrap_servers=bootstrap,
        checkpoint=checkpoint,
        job_name="bench_s3",
        source_topic=SOURCE,
        sink_topic=sink,
        trigger_interval="1 second",
        max_offsets_per_trigger=per_trigger,
    )
    spec["progress_batches"] = 500
    driver = start_local_job(JobSpec.from_dict(spec), workdir)
    kafka = KafkaFacade({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 1800
    try:
        while True:
            try:
                if caught_up(CheckpointReader(checkpoint).position(), end_offsets(kafka, [SOURCE])):
                    break
            except Exception:  # noqa: BLE001 - no checkpoint yet
                pass
            if not pid_alive(driver.pid):
                raise RuntimeError(f"driver exited:\n{read_log(driver)}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"gave up waiting for the job to read its input:\n{read_log(driver)}"
                )
            time.sleep(1)
        request_stop(checkpoint, requested_by="benchmark")
        if wait_exit(driver, 180) != 0:
            raise RuntimeError(f"driver did not stop cleanly:\n{read_log(driver)}")
    finally:
        kafka.close()
    progress = ControlFolder(checkpoint).read_progress()
    assert progress is not None
    return [dict(b.duration_ms) for b in progress.batches if b.num_input_rows > 0]


def _summary(batches: list[dict[str, int]], warmup: int) -> dict[str, Any]:
    kept = batches[warmup:]
    out: dict[str, Any] = {"batches": len(kept)}
    for part in PARTS:
        values = [b.get(part, 0) for b in kept]
        out[f"{part}_mean_ms"] = round(statistics.fmean(values), 1) if values else None
        out[f"{part}_median_ms"] = statistics.median(values) if values else None
    return out


def run(
    events: int = 60_000, per_trigger: int = 2_000, repeats: int = 2, warmup: int = 2
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kafkaspark-bench-") as tmp:
        base = Path(tmp)
        with (
            LocalKafkaCluster(base / "kafka") as cluster,
            LocalS3Server(base / "s3") as server,
            mock.patch.dict(os.environ, server.aws_environment()),
        ):
            server.create_bucket(BUCKET)
            bootstrap = cluster.bootstrap_servers
            from confluent_kafka.admin import AdminClient, NewTopic

            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic(SOURCE, 3, 1)])[SOURCE].result(60)
            produced = produce_events(bootstrap, SOURCE, list(generate_events(events, seed=5)))
            batches: dict[str, list[dict[str, int]]] = {"local": [], "s3": []}
            runs = []
            for rep in range(int(repeats)):
                order = ("local", "s3") if rep % 2 == 0 else ("s3", "local")
                for storage in order:
                    checkpoint = (
                        str(base / f"r{rep}-local" / "checkpoint")
                        if storage == "local"
                        else f"s3://{BUCKET}/r{rep}/checkpoint"
                    )
                    started = time.perf_counter()
                    found = _run_once(
                        bootstrap,
                        checkpoint,
                        f"bench_s3_sink_{rep}_{storage}",
                        base / f"drivers-{rep}-{storage}",
                        int(per_trigger),
                    )
                    seconds = time.perf_counter() - started
                    print(
                        f"repeat {rep} {storage}: {len(found)} batches in {seconds:.0f}s",
                        file=sys.stderr,
                        flush=True,
                    )
                    batches[storage].extend(found[int(warmup) :])
                    runs.append(
                        {
                            "repeat": rep,
                            "storage": storage,
                            "batches": len(found),
                            "wall_s": round(seconds, 1),
                            **_summary(found, int(warmup)),
                        }
                    )
    per_storage = {s: _summary(b, 0) for s, b in batches.items()}
    ratios = {
        f"{part}_mean_s3_over_local": round(
            per_storage["s3"][f"{part}_mean_ms"] / per_storage["local"][f"{part}_mean_ms"], 2
        )
        for part in PARTS
        if per_storage["local"][f"{part}_mean_ms"]
    }
    return {
        "events": produced,
        "per_trigger": per_trigger,
        "per_storage": per_storage,
        "ratios": ratios,
        "runs": runs,
    }
