"""What a deploy does over what it observed."""

from __future__ import annotations

from airflow_provider_kafkaspark.core.deploy.decide import DeployAction, decide_deploy
from airflow_provider_kafkaspark.core.deploy.deployment import (
    Deployment,
    DeploymentStatus,
    SpecRecord,
    UpgradeMode,
)

A, B = "sha256:" + "a" * 64, "sha256:" + "b" * 64


def deployment(
    status: DeploymentStatus, desired: str | None, stable: str | None, holder: str | None = None
) -> Deployment:
    return Deployment(
        "clicks",
        status,
        UpgradeMode.SAVEPOINT,
        desired=SpecRecord(desired, {}) if desired else None,
        stable=SpecRecord(stable, {}) if stable else None,
        holder=holder,
    )


def test_nothing_running_is_a_submit_with_or_without_a_record() -> None:
    assert decide_deploy(None, A, running=False, me="t").action is DeployAction.SUBMIT
    stable = deployment(DeploymentStatus.STABLE, A, A)
    assert decide_deploy(stable, B, running=False, me="t").action is DeployAction.SUBMIT


def test_the_desired_spec_running_is_a_noop() -> None:
    for status in (DeploymentStatus.STABLE, DeploymentStatus.DEPLOYED):
        decision = decide_deploy(deployment(status, A, A), A, running=True, me="t")
        assert decision.action is DeployAction.NOOP
        assert "runs already" in decision.reason


def test_another_spec_running_is_an_upgrade() -> None:
    decision = decide_deploy(deployment(DeploymentStatus.STABLE, A, A), B, running=True, me="t")
    assert decision.action is DeployAction.UPGRADE
    # A job started without a deploy: its spec is unknown, so it is upgraded.
    assert decide_deploy(None, A, running=True, me="t").action is DeployAction.UPGRADE


def test_an_upgrade_held_by_another_is_refused_naming_the_holder() -> None:
    held = deployment(DeploymentStatus.UPGRADING, B, A, holder="airflow:d.deploy:run1")
    decision = decide_deploy(held, B, running=True, me="airflow:d.deploy:run2")
    assert decision.action is DeployAction.REFUSE
    assert "airflow:d.deploy:run1" in decision.reason
    # Its own holder (a retried task) takes it up again.
    again = decide_deploy(held, B, running=True, me="airflow:d.deploy:run1")
    assert again.action is DeployAction.UPGRADE


def test_a_spec_rolled_back_from_is_not_tried_again_unless_asked() -> None:
    rolled = deployment(DeploymentStatus.ROLLED_BACK, B, A)
    assert decide_deploy(rolled, B, running=True, me="t").action is DeployAction.REFUSE
    retried = decide_deploy(rolled, B, running=True, me="t", retry_rolled_back=True)
    assert retried.action is DeployAction.UPGRADE
    # The stable spec runs after a rollback: deploying it again changes nothing.
    assert decide_deploy(rolled, A, running=True, me="t").action is DeployAction.NOOP


def test_after_a_failed_upgrade_whatever_runs_is_replaced() -> None:
    failed = deployment(DeploymentStatus.FAILED, B, A)
    assert decide_deploy(failed, B, running=True, me="t").action is DeployAction.UPGRADE
