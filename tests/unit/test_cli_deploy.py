"""`kafkaspark deploy`: status from the record, one-line errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.cli import main
from airflow_provider_kafkaspark.core.deploy.deployment import (
    Deployment,
    DeploymentStatus,
    SpecRecord,
    UpgradeMode,
)
from airflow_provider_kafkaspark.core.deploy.record_file import DeploymentFile


def test_status_prints_the_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checkpoint = str(tmp_path / "ckpt")
    rec = SpecRecord("sha256:abc", {"job_name": "clicks"}, savepoint_id="clicks-b3")
    deployment = Deployment("clicks", DeploymentStatus.STABLE, UpgradeMode.SAVEPOINT, rec, rec)
    DeploymentFile(checkpoint).write(
        deployment.moved(DeploymentStatus.STABLE, "health healthy", by="t", at_ms=1)
    )
    assert main(["deploy", "status", "--checkpoint", checkpoint, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["status"] == "STABLE" and shown["stable_savepoint"] == "clicks-b3"
    assert shown["history"][-1]["reason"] == "health healthy"


def test_status_without_a_record_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["deploy", "status", "--checkpoint", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "_kafkaspark/deployment.json: not there" in err and len(err.splitlines()) == 1


def test_apply_refuses_a_spec_that_fails_validation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "clicks.json"
    spec.write_text(json.dumps({"job_name": "bad name!", "source": {}, "sink": {}}))
    assert main(["deploy", "apply", str(spec), "--savepoint-root", str(tmp_path / "sp")]) == 2
    assert "job spec field 'checkpoint_location': missing" in capsys.readouterr().err
