"""What a deploy does, decided over what it observed (pure): the deployment's record, whether
a driver runs on the job's checkpoint, and the desired spec's hash."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from airflow_provider_kafkaspark.core.deploy.deployment import Deployment, DeploymentStatus


class DeployAction(str, enum.Enum):
    SUBMIT = "submit"  # nothing runs: start the desired spec
    NOOP = "noop"  # the desired spec runs and is stable (or deployed): nothing to do
    UPGRADE = "upgrade"  # another spec runs: upgrade in the deployment's mode
    REFUSE = "refuse"  # another deploy holds the deployment, or the spec was rolled back


@dataclass(frozen=True)
class DeployDecision:
    action: DeployAction
    reason: str


def decide_deploy(
    current: Deployment | None,
    desired_hash: str,
    *,
    running: bool,
    me: str,
    retry_rolled_back: bool = False,
) -> DeployDecision:
    """The action for a deploy by `me` of the spec hashed `desired_hash`.

    An upgrade or rollback held by another is refused (naming the holder); one held by `me`
    (a retried task) is taken up again as an upgrade. A spec the deployment rolled back from
    is not tried again unless asked: each try repeats the output since its savepoint."""
    if current is not None and current.status.in_progress and current.holder != me:
        return DeployDecision(
            DeployAction.REFUSE,
            f"deployment {current.job_name} is {current.status.value}, held by "
            f"{current.holder}; wait for it to end",
        )
    desired_now = current.desired.spec_hash if current and current.desired else None
    if (
        current is not None
        and current.status is DeploymentStatus.ROLLED_BACK
        and desired_now == desired_hash
        and not retry_rolled_back
    ):
        last = current.history[-1].reason if current.history else "unhealthy"
        return DeployDecision(
            DeployAction.REFUSE,
            f"spec {desired_hash[:12]} of {current.job_name} was rolled back ({last}); change "
            f"the spec, or retry it on purpose (retry_rolled_back)",
        )
    if not running:
        return DeployDecision(DeployAction.SUBMIT, "no driver runs on the checkpoint")
    running_hash = _running_hash(current)
    if running_hash == desired_hash and current is not None and not current.status.in_progress:
        return DeployDecision(
            DeployAction.NOOP, f"spec {desired_hash[:12]} runs already ({current.status.value})"
        )
    if running_hash is None:
        return DeployDecision(
            DeployAction.UPGRADE,
            "a driver runs with a spec this deployment has no record of",
        )
    return DeployDecision(
        DeployAction.UPGRADE, f"spec {running_hash[:12]} runs; {desired_hash[:12]} is desired"
    )


def _running_hash(current: Deployment | None) -> str | None:
    """The spec the running driver was deployed with: the stable one after a rollback or a
    failed first gate, else the desired one."""
    if current is None:
        return None
    if current.status is DeploymentStatus.ROLLED_BACK:
        return current.stable.spec_hash if current.stable else None
    if current.status in (DeploymentStatus.DEPLOYED, DeploymentStatus.STABLE):
        return current.desired.spec_hash if current.desired else None
    # UPGRADING or ROLLING_BACK taken up again by its holder, or FAILED: which spec runs is
    # not known for sure, so whichever runs is replaced.
    return None
