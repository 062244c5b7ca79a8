"""Savepoints without Spark: a published manifest of an empty checkpoint, of a chosen age."""

from __future__ import annotations

from airflow_provider_kafkaspark.core.state.savepoint import SavepointManifest, SavepointStore


def fake_savepoint(
    store: SavepointStore, sid: str, created_at_ms: int, job_name: str = "job"
) -> SavepointManifest:
    manifest = SavepointManifest(
        savepoint_id=sid,
        job_name=job_name,
        query_id="q",
        last_planned_batch=1,
        last_committed_batch=1,
        pending_batch=None,
        offsets={},
        planned_offsets={},
        created_at="2026-11-27T00:00:00.000+00:00",
        created_at_ms=created_at_ms,
        spark_version=None,
        source_checkpoint="/cp",
        files=(),
    )
    return store._publish(store.location.child(sid), manifest)
