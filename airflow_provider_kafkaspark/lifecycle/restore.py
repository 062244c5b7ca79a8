"""Restore: verify a savepoint, reconcile its offsets against Kafka, and restore it into the
job's checkpoint location before a submit."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

from airflow_provider_kafkaspark.core.kafka.reconcile import (
    ReconcilePolicy,
    Severity,
    build_reconcile_plan,
)
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.state.restore import RestoreMode, restore
from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore
from airflow_provider_kafkaspark.lifecycle.errors import RestoreRefusedError


@contextlib.contextmanager
def in_use_while(store: SavepointStore, savepoint_id: str | None) -> Iterator[None]:
    """Mark `savepoint_id` in use while the block runs, so that a retention run (after a
    savepoint taken meanwhile) does not dispose of the savepoint being restored. A mark that
    was there before (a person's) stays; only the mark made here is removed."""
    if savepoint_id is None or store.is_in_use(savepoint_id):
        yield
        return
    store.mark_in_use(savepoint_id)
    try:
        yield
    finally:
        store.mark_in_use(savepoint_id, in_use=False)


def restore_for_submit(
    spec: JobSpec,
    *,
    savepoint_root: str,
    savepoint_ref: str,
    mode: str,
    kafka_config: dict[str, Any],
    block_on: Severity = Severity.CRITICAL,
    force: bool = False,
) -> tuple[JobSpec, dict[str, Any]]:
    """Verify the savepoint, reconcile its offsets against Kafka, restore it for `spec`.

    The job's checkpoint location is moved aside (kept as a backup) when it is not empty:
    the restored checkpoint takes its place, or, in `offsets`/`latest` mode, the query
    starts on a fresh checkpoint from the savepoint's offsets or the end of each partition.
    """
    from airflow_provider_kafkaspark.core.health.observe import kafka_view
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade

    chosen = RestoreMode.parse(mode)
    store = SavepointStore(savepoint_root)
    summary: dict[str, Any] = {"mode": chosen.value}
    if chosen is not RestoreMode.LATEST:
        manifest = store.resolve(savepoint_ref, spec.job_name)
        store.require_verified(manifest.savepoint_id)
        offsets = {t: {int(p): o for p, o in ps.items()} for t, ps in manifest.offsets.items()}
        with KafkaFacade(kafka_config) as kafka:
            view = kafka_view(kafka, offsets, spec.source.subscribe)
        # The job's own failOnDataLoss decides whether a retention gap blocks, as in Spark.
        policy = ReconcilePolicy(fail_on_data_loss=spec.source.fail_on_data_loss)
        plan = build_reconcile_plan(offsets, view, policy)
        summary.update(savepoint_id=manifest.savepoint_id, reconcile=plan.summary())
        if plan.blocking(block_on) and not force:
            worst = [f for f in plan.findings if f.severity >= block_on][:3]
            raise RestoreRefusedError(
                f"restore of savepoint {manifest.savepoint_id} refused: "
                + "; ".join(f"{f.kind.value} {f.where}: {f.message}" for f in worst)
            )
        ref: str | None = manifest.savepoint_id
    else:
        ref = None
    # Offsets and latest modes need a fresh checkpoint: Spark ignores startingOffsets for
    # an existing one. Checkpoint mode restores into the (moved-aside) location.
    from airflow_provider_kafkaspark.core.state.restore import move_aside
    from airflow_provider_kafkaspark.core.storage.location import open_location

    target = open_location(spec.checkpoint_location)
    if chosen is not RestoreMode.CHECKPOINT and target.has_files():
        summary["backup"] = move_aside(target).url
    with in_use_while(store, ref):
        result = restore(
            store,
            ref,
            target,
            chosen,
            job_name=spec.job_name,
            move_target_aside=True,
            force=force,
            spark_version=spec.spark_version,
        )
    if result.backup:
        summary["backup"] = result.backup
    if result.new_query_id:
        # A rollback: the batches after the savepoint are written again (core/state/restore).
        summary["new_query_id"] = result.new_query_id
    if chosen is RestoreMode.CHECKPOINT:
        return spec, summary
    source = dataclasses.replace(spec.source, starting_offsets=result.starting_offsets)
    return dataclasses.replace(spec, source=source), summary
