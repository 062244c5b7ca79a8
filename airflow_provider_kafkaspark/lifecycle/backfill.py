"""Backfill: the job's transformation as a bounded Spark batch over the offsets of a time
range, written to that range's own folder (replaced on a re-run)."""

from __future__ import annotations

from typing import Any

from airflow_provider_kafkaspark.core.kafka.offsets import (
    TopicOffsets,
    TopicPartition,
    format_kafka_offsets,
    nest,
    offsets_json,
    total_records,
)
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.lifecycle.errors import BackfillError


def backfill_offsets(
    kafka_config: dict[str, Any], topics: tuple[str, ...], start_ms: int, end_ms: int
) -> tuple[TopicOffsets, TopicOffsets]:
    """Per-partition [start, end) offsets of a time range (end exclusive)."""
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade

    with KafkaFacade(kafka_config) as kafka:
        counts = kafka.topic_partitions(topics)
        partitions = [TopicPartition(t, p) for t, n in counts.items() for p in range(n)]
        starts = kafka.offsets_for_times(dict.fromkeys(partitions, start_ms))
        ends = kafka.offsets_for_times(dict.fromkeys(partitions, end_ms))
    return nest(starts.items()), nest(ends.items())


def run_backfill(
    spec: JobSpec,
    *,
    kafka_config: dict[str, Any],
    start_ms: int,
    end_ms: int,
    output_root: str,
    master: str,
    timeout_s: float,
) -> dict[str, Any]:
    """Run `spark/backfill.py` over the offsets of [start_ms, end_ms); blocks until done.
    The driver runs through the backend `master` picks, as a streaming job's does."""
    import json

    from airflow_provider_kafkaspark.backends import deployment_backend
    from airflow_provider_kafkaspark.backends.base import BatchBackend

    if not spec.source.subscribe:
        raise BackfillError("backfill needs a job whose source names its topics (subscribe)")
    backend = deployment_backend(master)
    if not isinstance(backend, BatchBackend):
        raise BackfillError(f"the {backend.name} backend does not run a backfill's batch driver")
    starting, ending = backfill_offsets(kafka_config, spec.source.subscribe, start_ms, end_ms)
    output = f"{output_root.rstrip('/')}/interval={start_ms}-{end_ms}"
    proc = backend.run_batch(
        spec,
        "airflow_provider_kafkaspark.spark.backfill",
        [
            "--output",
            output,
            "--starting-offsets",
            format_kafka_offsets(starting),
            "--ending-offsets",
            format_kafka_offsets(ending),
        ],
        timeout_s=timeout_s,
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise BackfillError(f"backfill of {output} failed (exit {proc.returncode}):\n{tail}")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "start_ms": start_ms,
        "end_ms": end_ms,
        "starting_offsets": offsets_json(starting),
        "ending_offsets": offsets_json(ending),
        "records": total_records(starting, ending),
        "rows": int(summary["rows"]),
        "output": output,
    }
