"""The deployment's record: transitions, a bounded history, its JSON form."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.core.deploy.deployment import (
    MAX_HISTORY,
    Deployment,
    DeploymentStatus,
    SpecRecord,
    UpgradeMode,
)
from airflow_provider_kafkaspark.errors import ControlFileError, InvalidArgumentError


def test_a_transition_appends_history_and_sets_the_holder_only_in_progress() -> None:
    d = Deployment("clicks", DeploymentStatus.DEPLOYED, UpgradeMode.SAVEPOINT)
    desired = SpecRecord("sha256:1", {"job_name": "clicks"}, code={"/dags/code": "ab.zip"})
    up = d.moved(DeploymentStatus.UPGRADING, "new code", by="task", at_ms=5, desired=desired)
    assert (up.status, up.holder, up.updated_at_ms) == (DeploymentStatus.UPGRADING, "task", 5)
    assert up.history[-1].spec_hash == "sha256:1"
    done = up.moved(DeploymentStatus.STABLE, "healthy", by="task", at_ms=9, stable=desired)
    assert done.holder is None and done.stable == desired
    assert [t.status for t in done.history] == [
        DeploymentStatus.UPGRADING,
        DeploymentStatus.STABLE,
    ]


def test_the_history_keeps_its_last_entries() -> None:
    d = Deployment("clicks", DeploymentStatus.DEPLOYED, UpgradeMode.LAST_STATE)
    for i in range(MAX_HISTORY + 7):
        d = d.moved(DeploymentStatus.STABLE, f"step {i}", by="t", at_ms=i)
    assert len(d.history) == MAX_HISTORY
    assert d.history[-1].reason == f"step {MAX_HISTORY + 6}"


def test_the_record_round_trips_through_json() -> None:
    rec = SpecRecord("sha256:1", {"job_name": "c"}, savepoint_id="c-b3", recorded_at_ms=2)
    d = Deployment("c", DeploymentStatus.STABLE, UpgradeMode.STATELESS, desired=rec, stable=rec)
    d = d.moved(DeploymentStatus.ROLLED_BACK, "unhealthy", by="t", at_ms=3)
    assert Deployment.from_dict(d.to_dict(), "deployment.json") == d
    assert d.summary()["stable_savepoint"] == "c-b3"


def test_a_bad_record_names_the_file() -> None:
    with pytest.raises(ControlFileError, match=r"deployment\.json"):
        Deployment.from_dict({"format_version": 1, "status": "NOPE"}, "s3://b/c/deployment.json")
    with pytest.raises(ControlFileError, match="format"):
        Deployment.from_dict({"format_version": 9}, "deployment.json")


def test_an_unknown_upgrade_mode_names_the_choices() -> None:
    with pytest.raises(InvalidArgumentError, match="last-state"):
        UpgradeMode.parse("blue-green")
