"""An upgrade of a running deployment, in its mode, with the compatibility check before the
old job is touched and an automatic rollback when the new spec is not healthy.

    savepoint   check; stop at a batch boundary; savepoint S; restore S (checkpoint mode)
    last-state  check; stop at a batch boundary; continue the checkpoint as it is
    stateless   stop; savepoint S; start on fresh state from S's offsets (offsets mode)

A rollback stops the new driver (a forced kill allowed: it is unhealthy) and starts the
stable spec, with its code as it was deployed, from S in checkpoint mode (savepoint and
stateless) or from the checkpoint as it is (last-state); the task then fails saying so."""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.deploy.deployment import (
    DeploymentStatus,
    SpecRecord,
    UpgradeMode,
)
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import (
    DeploymentRefusedError,
    KafkaSparkError,
    UpgradeRolledBackError,
)
from airflow_provider_kafkaspark.lifecycle.deploy_code import with_stashed_code
from airflow_provider_kafkaspark.lifecycle.inputs import with_connection
from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop, stop_job
from airflow_provider_kafkaspark.lifecycle.submit import RestoreRequest

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.lifecycle.deploy import DeployContext

log = logging.getLogger(__name__)


def upgrade(ctx: DeployContext, why: str) -> dict[str, Any]:
    """Upgrade the running job to `ctx.desired`; returns the new driver's submit handle."""
    policy = ctx.request.policy
    mode = policy.upgrade_mode
    before = ctx.deployment
    ctx.move(DeploymentStatus.UPGRADING, f"upgrade ({mode.value}): {why}", desired=ctx.desired)
    try:
        check_note = _check(ctx)
    except BaseException:
        # The old job runs untouched: the record says so and goes back to where it was.
        ctx.move(
            before.status if not before.status.in_progress else DeploymentStatus.FAILED,
            f"upgrade to {ctx.desired.spec_hash[:12]} refused before the old job was touched",
            desired=before.desired,
        )
        raise
    try:
        return _replace_running(ctx, check_note)
    except (UpgradeRolledBackError, DeploymentRefusedError):
        raise  # recorded already
    except KafkaSparkError as exc:
        # Which spec runs now is not known for sure: FAILED, and the next deploy upgrades.
        ctx.move(DeploymentStatus.FAILED, f"upgrade interrupted: {exc}")
        raise


def _replace_running(ctx: DeployContext, check_note: str) -> dict[str, Any]:
    """Stop the old job, start the new spec, gate it, roll back when unhealthy."""
    policy = ctx.request.policy
    mode = policy.upgrade_mode
    spec = ctx.request.spec
    standby = _standby(ctx) if mode is UpgradeMode.SAVEPOINT else None
    try:
        savepoint_id = _stop_old(ctx)
    except BaseException:
        if standby is not None:
            from airflow_provider_kafkaspark.lifecycle.handover import retire_standby

            retire_standby(standby)
        raise
    stable = ctx.deployment.stable
    if stable is not None and savepoint_id is not None:
        # What the stable spec can be restored to: the state it left behind.
        stable = dataclasses.replace(stable, savepoint_id=savepoint_id)
    ctx.desired = dataclasses.replace(ctx.desired, savepoint_id=savepoint_id)
    ctx.move(
        DeploymentStatus.UPGRADING,
        f"old job stopped{f', savepoint {savepoint_id}' if savepoint_id else ''}{check_note}",
        desired=ctx.desired,
        stable=stable,
    )
    restore = _restore_of(mode, policy.savepoint_root, savepoint_id)
    submitted_ms = now_ms()
    handle = ctx.submit(spec, restore, standby=standby)
    healthy, reason = ctx.gate(handle, submitted_ms)
    if healthy:
        ctx.move(DeploymentStatus.STABLE, reason, stable=ctx.desired)
        _retain(ctx)
        return handle
    if not policy.rollback or stable is None:
        ctx.move(DeploymentStatus.FAILED, reason)
        raise DeploymentRefusedError(
            f"{spec.job_name}: the upgrade to {ctx.desired.spec_hash[:12]} is not healthy "
            f"({reason}); "
            + ("rollback is off" if not policy.rollback else "no stable spec to roll back to")
            + "; the deployment is FAILED"
        )
    rolled = roll_back(ctx, stable, savepoint_id, reason)
    raise UpgradeRolledBackError(rolled)


def _check(ctx: DeployContext) -> str:
    """The compatibility check before the old job is touched; a note for the record. Raises
    `DeploymentRefusedError` for an incompatible spec, or for one that could not be checked
    when the policy does not let the upgrade go on without it."""
    policy = ctx.request.policy
    if not policy.checks_compatibility:
        return ""
    from airflow_provider_kafkaspark.lifecycle.compat_check import check_compatibility

    result = check_compatibility(ctx.backend, ctx.request.spec, ctx.request.options)
    ctx.timings["compat_check_s"] = round(result.seconds, 2)
    if result.skipped:
        if not policy.proceed_without_check:
            raise DeploymentRefusedError(
                f"{ctx.request.spec.job_name}: the compatibility check could not run "
                f"({result.reason}) and the policy requires it (proceed_without_check=False)"
            )
        log.warning("compatibility check skipped: %s; upgrading anyway", result.reason)
        return f"; compatibility check skipped ({result.reason})"
    if not result.compatible:
        raise DeploymentRefusedError(
            f"{ctx.request.spec.job_name}: the new spec {ctx.desired.spec_hash[:12]} cannot "
            f"continue the running job's state: {result.reason}; the running job was not "
            f"touched"
        )
    log.info(
        "compatibility check passed in %.1fs: the new spec ran batch %s of a copy of the "
        "running job's state",
        result.seconds,
        result.batch,
    )
    return f"; compatibility check passed in {result.seconds:.1f}s"


def _stop_old(ctx: DeployContext) -> str | None:
    """Stop the running job (at a batch boundary unless stateless) and take the upgrade's
    savepoint (savepoint and stateless modes); returns its id."""
    policy = ctx.request.policy
    mode = policy.upgrade_mode
    spec = ctx.request.spec
    started = time.monotonic()
    stop_job(
        ctx.checkpoint,
        requested_by=ctx.request.by,
        reason=f"upgrade to {ctx.desired.spec_hash[:12]} ({mode.value})",
        drain_timeout_s=spec.drain_timeout_s,
        at_batch_boundary=mode is not UpgradeMode.STATELESS,
    )
    ctx.timed("stop", started)
    savepoint_id = None
    if mode is not UpgradeMode.LAST_STATE:
        assert policy.savepoint_root is not None
        started = time.monotonic()
        manifest = savepoint_after_stop(
            ctx.checkpoint, policy.savepoint_root, spec.job_name, spark_version=spec.spark_version
        )
        ctx.timed("savepoint", started)
        savepoint_id = manifest.savepoint_id
    return savepoint_id


def _standby(ctx: DeployContext) -> dict[str, Any] | None:
    """A warm standby of the new spec, when the policy asks and the backend can hand over."""
    policy = ctx.request.policy
    if not policy.warm_handover:
        return None
    from airflow_provider_kafkaspark.lifecycle.handover import submit_standby, wait_standby_ready

    started = time.monotonic()
    handle = submit_standby(ctx.backend, ctx.request.spec, ctx.request.options)
    wait_standby_ready(handle, policy.standby_ready_timeout_s)  # stops it when it fails
    ctx.timed("standby_warm", started)
    return handle


def _restore_of(
    mode: UpgradeMode, savepoint_root: str | None, savepoint_id: str | None
) -> RestoreRequest | None:
    if mode is UpgradeMode.LAST_STATE or savepoint_id is None or savepoint_root is None:
        return None
    restore_mode = "offsets" if mode is UpgradeMode.STATELESS else "checkpoint"
    return RestoreRequest(savepoint_root, savepoint_id, restore_mode)


def roll_back(ctx: DeployContext, stable: SpecRecord, savepoint_id: str | None, reason: str) -> str:
    """Stop the unhealthy driver and start the stable spec again; returns the message the
    failing task ends with."""
    policy = ctx.request.policy
    spec = ctx.request.spec
    ctx.move(DeploymentStatus.ROLLING_BACK, reason, stable=stable)
    started = time.monotonic()
    stop_job(
        ctx.checkpoint,
        requested_by=ctx.request.by,
        reason=f"rollback to {stable.spec_hash[:12]}",
        drain_timeout_s=min(spec.drain_timeout_s, 60.0),
        allow_force_kill=True,
    )
    old = JobSpec.from_dict(stable.spec)
    old = with_stashed_code(ctx.checkpoint, old, stable.code)
    old = with_connection(old, spec.source.bootstrap_servers, spec.kafka_config)
    restore = None
    if savepoint_id is not None and policy.savepoint_root is not None:
        restore = RestoreRequest(policy.savepoint_root, savepoint_id, "checkpoint")
    try:
        submitted_ms = now_ms()
        handle = ctx.submit(old, restore)
        healthy, back = ctx.gate(handle, submitted_ms)
    except KafkaSparkError as exc:
        healthy, back = False, f"rollback failed: {exc}"
    ctx.timed("rollback", started)
    where = f" from savepoint {savepoint_id}" if restore else " on the checkpoint as it was"
    if not healthy:
        ctx.move(DeploymentStatus.FAILED, f"rollback to {stable.spec_hash[:12]}: {back}")
        return (
            f"{spec.job_name}: the upgrade to {ctx.desired.spec_hash[:12]} was unhealthy "
            f"({reason}) and the rollback to {stable.spec_hash[:12]}{where} is not healthy "
            f"either ({back}); the deployment is FAILED"
        )
    ctx.move(DeploymentStatus.ROLLED_BACK, f"upgrade unhealthy: {reason}")
    repeats = " (output since the savepoint is written again)" if restore else ""
    return (
        f"{spec.job_name}: the upgrade to {ctx.desired.spec_hash[:12]} was unhealthy "
        f"({reason}); rolled back to {stable.spec_hash[:12]}{where}{repeats}"
    )


def _retain(ctx: DeployContext) -> None:
    """Savepoint retention after the upgrade's savepoint; the deployment's own savepoints are
    kept (`lifecycle/retention.deployment_savepoints`)."""
    policy = ctx.request.policy
    if policy.savepoint_root is None or (
        policy.max_savepoints is None and policy.max_savepoint_age_s is None
    ):
        return
    from airflow_provider_kafkaspark.core.state.savepoint import RetentionPolicy
    from airflow_provider_kafkaspark.lifecycle.retention import apply_retention

    summary = apply_retention(
        policy.savepoint_root,
        ctx.request.spec.job_name,
        ctx.checkpoint,
        RetentionPolicy(policy.max_savepoints, policy.max_savepoint_age_s),
    )
    log.info("savepoint retention: %s", summary)
