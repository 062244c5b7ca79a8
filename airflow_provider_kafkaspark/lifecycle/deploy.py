"""Deploy: make the running job match a desired spec, in one place for the operator and the
CLI. Observe (the deployment's record, a live driver), decide (`core/deploy/decide.py`), act:
submit when nothing runs, nothing when the desired spec runs, an upgrade in the deployment's
mode otherwise (`lifecycle/upgrade.py`), each through the health gate; the record in
`deployment.json` says what happened."""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.backends.base import preflight
from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.deploy.decide import DeployAction, decide_deploy
from airflow_provider_kafkaspark.core.deploy.deployment import (
    Deployment,
    DeploymentStatus,
    SpecRecord,
    UpgradeMode,
)
from airflow_provider_kafkaspark.core.deploy.record_file import DeploymentFile
from airflow_provider_kafkaspark.core.deploy.spec_hash import recorded_spec, spec_hash
from airflow_provider_kafkaspark.core.health.settings import HealthSettings
from airflow_provider_kafkaspark.errors import (
    DeploymentConflictError,
    DeploymentRefusedError,
    InvalidArgumentError,
)
from airflow_provider_kafkaspark.lifecycle.deploy_code import (
    code_artifacts,
    module_digest,
    stash,
)
from airflow_provider_kafkaspark.lifecycle.health_gate import wait_healthy
from airflow_provider_kafkaspark.lifecycle.observe import driver_present
from airflow_provider_kafkaspark.lifecycle.submit import (
    RestoreRequest,
    SubmitRequest,
    submit_streaming_job,
)

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.backends.base import JobBackend, SubmitOptions
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

log = logging.getLogger(__name__)

RESTORE_POLICIES = ("checkpoint", "savepoint")


@dataclass(frozen=True)
class DeployPolicy:
    """How a deployment moves: its upgrade mode, the compatibility check (None: on for the
    modes that keep state), whether an upgrade goes on when the check cannot run (no committed
    batch yet), the health gate and its bound, automatic rollback, savepoint retention, and
    what a submit with nothing running starts from (`checkpoint`: the job's checkpoint as it
    is; `savepoint`: the stable spec's savepoint, else the job's latest)."""

    upgrade_mode: UpgradeMode = UpgradeMode.SAVEPOINT
    savepoint_root: str | None = None
    compat_check: bool | None = None
    proceed_without_check: bool = False
    health: HealthSettings = field(
        default_factory=lambda: HealthSettings(min_new_batches=2, window_s=30, poll_interval_s=2)
    )
    health_timeout_s: float = 300.0
    rollback: bool = True
    max_savepoints: int | None = 10
    max_savepoint_age_s: float | None = None
    restore_policy: str = "checkpoint"
    retry_rolled_back: bool = False
    # A savepoint upgrade starts the new driver as a standby while the old one runs
    # (`lifecycle/handover.py`): the downtime is a stop and a query start.
    warm_handover: bool = False
    standby_ready_timeout_s: float = 600.0

    def checked(self) -> DeployPolicy:
        mode = UpgradeMode.parse(self.upgrade_mode)
        if self.restore_policy not in RESTORE_POLICIES:
            raise InvalidArgumentError(
                f"restore_policy={self.restore_policy!r} is not one of {list(RESTORE_POLICIES)}"
            )
        needs_root = mode is not UpgradeMode.LAST_STATE or self.restore_policy == "savepoint"
        if needs_root and not self.savepoint_root:
            raise InvalidArgumentError(
                f"upgrade_mode={mode.value!r} (restore_policy={self.restore_policy!r}) needs "
                f"savepoint_root"
            )
        if self.health_timeout_s <= 0:
            raise InvalidArgumentError(
                f"health_timeout_s must be positive, got {self.health_timeout_s}"
            )
        return replace(self, upgrade_mode=mode)

    @property
    def checks_compatibility(self) -> bool:
        if self.compat_check is not None:
            return self.compat_check
        return self.upgrade_mode is not UpgradeMode.STATELESS


@dataclass(frozen=True)
class DeployRequest:
    """A deploy's inputs once connections are read: `spec` with the connection's servers and
    settings, `given` as the author gave it (python_path resolved; what the record keeps),
    the in-process Kafka client config (`repr` hides it), and `by`: who deploys (a task, a
    person at a terminal), the holder an upgrade in progress names."""

    spec: JobSpec
    given: JobSpec
    kafka_client: dict[str, Any] = field(repr=False)
    options: SubmitOptions
    policy: DeployPolicy
    by: str
    # Part of the spec's hash when given: a new nonce restarts an unchanged spec.
    restart_nonce: str | None = None
    probe_bootstrap: bool = True
    probe_timeout_s: float = 5.0
    servers_from: str = "the job spec"


@dataclass
class DeployContext:
    """One deploy in progress: the request, the record file and the record as last written,
    the desired spec's record, and the step timings for the result."""

    backend: JobBackend
    request: DeployRequest
    file: DeploymentFile
    deployment: Deployment
    desired: SpecRecord
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def checkpoint(self) -> str:
        return self.request.spec.checkpoint_location

    def move(self, status: DeploymentStatus, reason: str, **changes: Any) -> Deployment:
        """Record a transition (conditionally: refused if another deploy wrote since)."""
        self.deployment = self.deployment.moved(
            status, reason, by=self.request.by, at_ms=now_ms(), **changes
        )
        self.file.write(self.deployment)
        log.info("deployment %s", self.deployment.describe())
        return self.deployment

    def timed(self, step: str, started: float) -> None:
        self.timings[f"{step}_s"] = round(time.monotonic() - started, 2)

    def submit(
        self,
        spec: JobSpec,
        restore: RestoreRequest | None,
        *,
        standby: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        request = SubmitRequest(
            spec=spec,
            kafka_client=self.request.kafka_client,
            options=self.request.options,
            if_running="fail",
            probe_bootstrap=self.request.probe_bootstrap,
            probe_timeout_s=self.request.probe_timeout_s,
            restore=restore,
            servers_from=self.request.servers_from,
            standby=standby,
        )
        started = time.monotonic()
        handle = submit_streaming_job(self.backend, request)
        self.timed("submit", started)
        return handle

    def gate(self, handle: dict[str, Any], submitted_ms: int) -> tuple[bool, str]:
        """The health gate over the run `handle` started: (healthy, reason)."""
        policy = self.request.policy
        started = time.monotonic()
        decision = wait_healthy(
            self.checkpoint,
            self.request.kafka_client,
            policy.health,
            since_batch=handle.get("since_batch"),
            since_ms=submitted_ms,
            timeout_s=policy.health_timeout_s,
        )
        self.timed("health_gate", started)
        return decision.state == "healthy", f"health {decision.state}: {decision.reason}"


def deploy_job(backend: JobBackend, request: DeployRequest) -> dict[str, Any]:
    """Make the job run `request.given`; returns what was done (`action`: submit, noop or
    upgrade), the spec hash, the deployment's summary, the submit handle and step timings.
    Raises `DeploymentConflictError` while another deploy holds the deployment,
    `DeploymentRefusedError` for a spec rolled back from or refused by the compatibility
    check, `UpgradeRolledBackError` after an automatic rollback."""
    policy = request.policy.checked()
    request = replace(request, policy=policy)
    spec = request.spec
    file = DeploymentFile(spec.checkpoint_location)
    current = file.read()
    with tempfile.TemporaryDirectory(prefix="kafkaspark-deploy-") as scratch:
        artifacts = code_artifacts(request.given, Path(scratch))
        given = request.given.to_dict()
        desired_hash = spec_hash(
            given,
            {a.entry: a.digest for a in artifacts},
            module_digest=module_digest(request.given),
            spark_version=request.given.spark_version,
            restart_nonce=request.restart_nonce,
        )
        running = driver_present(spec.checkpoint_location)
        decision = decide_deploy(
            current,
            desired_hash,
            running=running,
            me=request.by,
            retry_rolled_back=policy.retry_rolled_back,
        )
        log.info("deploy of %s: %s: %s", spec.job_name, decision.action.value, decision.reason)
        if decision.action is DeployAction.REFUSE:
            if current is not None and current.status.in_progress:
                raise DeploymentConflictError(decision.reason)
            raise DeploymentRefusedError(decision.reason)
        if decision.action is DeployAction.NOOP:
            assert current is not None
            return _result("noop", decision.reason, desired_hash, current, None, {})
        # Before an upgrade stops the running job: its new driver must be able to start here.
        preflight(backend, spec)
        stash(spec.checkpoint_location, artifacts)
        desired = SpecRecord(
            desired_hash,
            recorded_spec(given),
            recorded_at_ms=now_ms(),
            code={a.entry: a.name for a in artifacts},
        )
    deployment = current or Deployment(
        spec.job_name, DeploymentStatus.DEPLOYED, policy.upgrade_mode
    )
    deployment = replace(deployment, upgrade_mode=policy.upgrade_mode)
    ctx = DeployContext(backend, request, file, deployment, desired)
    if decision.action is DeployAction.SUBMIT:
        handle = _submit_desired(ctx)
        return _result("submit", decision.reason, desired_hash, ctx.deployment, handle, ctx.timings)
    from airflow_provider_kafkaspark.lifecycle.upgrade import upgrade

    handle = upgrade(ctx, decision.reason)
    return _result("upgrade", decision.reason, desired_hash, ctx.deployment, handle, ctx.timings)


def _submit_desired(ctx: DeployContext) -> dict[str, Any]:
    """Nothing runs: submit the desired spec (from the checkpoint as it is, or a savepoint by
    the restore policy), then the health gate: STABLE, or FAILED."""
    policy = ctx.request.policy
    restore = None
    savepoint_id = None
    if policy.restore_policy == "savepoint":
        assert policy.savepoint_root is not None
        stable = ctx.deployment.stable
        savepoint_id = stable.savepoint_id if stable and stable.savepoint_id else "latest"
        restore = RestoreRequest(policy.savepoint_root, savepoint_id, "checkpoint")
    submitted_ms = now_ms()
    handle = ctx.submit(ctx.request.spec, restore)
    restored = (handle.get("restored") or {}).get("savepoint_id")
    ctx.desired = replace(ctx.desired, savepoint_id=restored)
    ctx.move(DeploymentStatus.DEPLOYED, "submitted: nothing ran", desired=ctx.desired)
    healthy, reason = ctx.gate(handle, submitted_ms)
    if healthy:
        ctx.move(DeploymentStatus.STABLE, reason, stable=ctx.desired)
        return handle
    ctx.move(DeploymentStatus.FAILED, reason)
    raise DeploymentRefusedError(
        f"{ctx.request.spec.job_name}: the deployed spec is not healthy ({reason}); the "
        f"deployment is FAILED"
    )


def _result(
    action: str,
    reason: str,
    desired_hash: str,
    deployment: Deployment,
    handle: dict[str, Any] | None,
    timings: dict[str, float],
) -> dict[str, Any]:
    return {
        "action": action,
        "reason": reason,
        "job_name": deployment.job_name,
        "spec_hash": desired_hash,
        "status": deployment.status.value,
        "deployment": deployment.summary(),
        "handle": handle,
        "since_batch": None if handle is None else handle.get("since_batch"),
        "timings": timings,
    }


def deployment_status(checkpoint: str) -> Deployment | None:
    """The deployment's record, for `kafkaspark deploy status` and people."""
    return DeploymentFile(checkpoint).read()
