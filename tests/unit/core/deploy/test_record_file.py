"""deployment.json's conditional writes, and its place when a restore moves the checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.deploy.deployment import (
    Deployment,
    DeploymentStatus,
    UpgradeMode,
)
from airflow_provider_kafkaspark.core.deploy.record_file import DeploymentFile
from airflow_provider_kafkaspark.core.state.restore import move_aside
from airflow_provider_kafkaspark.core.storage.location import open_location
from airflow_provider_kafkaspark.errors import DeploymentConflictError


def record(status: DeploymentStatus = DeploymentStatus.STABLE) -> Deployment:
    return Deployment("clicks", status, UpgradeMode.SAVEPOINT)


def test_of_two_deploys_that_read_the_same_record_one_is_refused(tmp_path: Path) -> None:
    ckpt = str(tmp_path / "ckpt")
    DeploymentFile(ckpt).write(record())
    first, second = DeploymentFile(ckpt), DeploymentFile(ckpt)
    assert first.read() == second.read() == record()
    first.write(record(DeploymentStatus.UPGRADING))
    with pytest.raises(DeploymentConflictError, match="changed by another deploy"):
        second.write(record(DeploymentStatus.UPGRADING))
    first.write(record(DeploymentStatus.STABLE))  # its own writes go on
    assert DeploymentFile(ckpt).read() == record()


def test_two_first_deploys_create_it_once(tmp_path: Path) -> None:
    ckpt = str(tmp_path / "ckpt")
    first, second = DeploymentFile(ckpt), DeploymentFile(ckpt)
    assert first.read() is None and second.read() is None
    first.write(record())
    with pytest.raises(DeploymentConflictError):
        second.write(record())


def test_the_record_and_its_code_stay_where_a_restore_moves_the_state_aside(
    tmp_path: Path,
) -> None:
    ckpt = tmp_path / "ckpt"
    (ckpt / "offsets").mkdir(parents=True)
    (ckpt / "offsets" / "0").write_text("v1")
    file = DeploymentFile(str(ckpt))
    file.write(record())
    (ckpt / "_kafkaspark" / "code").mkdir()
    (ckpt / "_kafkaspark" / "code" / "ab12.zip").write_bytes(b"PK code")
    backup = move_aside(open_location(str(ckpt)))
    assert Path(backup.root, "offsets", "0").exists()
    assert not (ckpt / "offsets").exists()
    # The kept code too: a rollback fetches the stable spec's code from there.
    assert (ckpt / "_kafkaspark" / "code" / "ab12.zip").read_bytes() == b"PK code"
    # Byte for byte: the conditional write of the deploy that read it still holds.
    file.write(record(DeploymentStatus.UPGRADING))
    assert DeploymentFile(str(ckpt)).read() == record(DeploymentStatus.UPGRADING)
