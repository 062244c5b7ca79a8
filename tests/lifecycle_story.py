"""The pieces of the example job's lifecycle story that each cluster manager's tier tells
the same way (tests/cluster on YARN, tests/k8s on Kubernetes): where the checkpoint is, who
holds its lease, a stop with a savepoint through the operator, and the output's check."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from airflow.sdk import Context

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.health.observe import caught_up, end_offsets
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.examples.access_events import AccessEvent
from airflow_provider_kafkaspark.examples.ip_count import expected_counts, sink_windows
from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator
from tests.integration.kafka_util import read_all_values


class OutletEvents(SimpleNamespace):
    """What a task's `outlet_events[...]` accessor takes: `extra`, and `add` for an alias."""

    def add(self, asset: Any, extra: dict[str, Any] | None = None) -> None:
        self.added = (asset, extra)


def committed(checkpoint: str) -> int:
    """The checkpoint's latest committed batch, -1 before the first."""
    try:
        return CheckpointReader(checkpoint).position().latest_committed or -1
    except Exception:  # noqa: BLE001 - not written yet
        return -1


def read_to_end(checkpoint: str, kafka: KafkaFacade, topics: Sequence[str]) -> bool:
    return caught_up(CheckpointReader(checkpoint).position(), end_offsets(kafka, list(topics)))


def lease_owner(checkpoint: str) -> str | None:
    lease = ControlFolder(checkpoint).read_lease()
    return None if lease is None else lease.owner_id


def stop_with_savepoint(
    task_id: str, handle: dict[str, Any], savepoints: str, aws_conn_id: str
) -> dict[str, Any]:
    """The stop task of a restart window: the handle alone names the job, its checkpoint
    and its driver."""
    context: dict[str, Any] = {"outlet_events": defaultdict(OutletEvents)}
    return StopStreamingJobOperator(
        task_id=task_id,
        savepoint_root=savepoints,
        handle=handle,
        aws_conn_id=aws_conn_id,
        deferrable=False,
        poll_interval_s=0.5,
    ).execute(cast(Context, context))


def check_output(
    bootstrap: str,
    sink: str,
    partitions: int,
    events: Sequence[AccessEvent],
    flush_ms: int,
    figures: dict[str, Any],
    figures_file: Path,
) -> None:
    """The sink read `read_committed`: every closed window once, none twice; the figures
    printed and written."""
    counts, duplicates = sink_windows(read_all_values(bootstrap, sink, partitions))
    expected = expected_counts(list(events), closed_before_ms=flush_ms - 10_000)
    missing = sum(1 for k in expected if k not in counts)
    figures.update(duplicates=duplicates, missing=missing, windows=len(expected))
    figures_file.write_text(json.dumps(figures, indent=2))
    print(f"{figures_file.stem}:", json.dumps(figures))
    assert duplicates == 0 and missing == 0
    assert counts == expected
