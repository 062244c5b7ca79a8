"""`kafkaspark deploy`: status from the record, one-line errors for bad input; apply's
policy (the warm handover) and its holder: one of its own, so that a second apply is refused
while the first upgrades, and an upgrade whose apply has ended is taken up."""

from __future__ import annotations

import getpass
import json
import os
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.cli import main
from airflow_provider_kafkaspark.commands.deploy import CliHolder, left_by_ended_apply
from airflow_provider_kafkaspark.core.deploy.deployment import (
    Deployment,
    DeploymentStatus,
    SpecRecord,
    UpgradeMode,
)
from airflow_provider_kafkaspark.core.deploy.record_file import DeploymentFile
from airflow_provider_kafkaspark.lifecycle.deploy import DeployContext, DeployRequest


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


# -- apply: the warm handover and who holds the deployment ------------------------------

SPEC = {
    "job_name": "clicks",
    "source": {"bootstrap_servers": "127.0.0.1:9", "subscribe": ["in"]},
    "sink": {"kind": "console"},
}


@dataclass
class NoDriversBackend:
    """Where the CLI's drivers would start; these tests stop short of starting one."""

    name: str = "local"


def spec_file(tmp_path: Path) -> tuple[Path, str]:
    checkpoint = str(tmp_path / "ckpt")
    path = tmp_path / "clicks.json"
    path.write_text(json.dumps({**SPEC, "checkpoint_location": checkpoint}))
    return path, checkpoint


def apply_args(spec: Path, tmp_path: Path, *more: str) -> list[str]:
    return [
        "deploy",
        "apply",
        str(spec),
        "--savepoint-root",
        str(tmp_path / "sp"),
        "--no-probe",
        *more,
    ]


@pytest.fixture
def no_drivers(monkeypatch: pytest.MonkeyPatch) -> None:
    import airflow_provider_kafkaspark.commands.job as job_commands

    monkeypatch.setattr(job_commands, "_backend", lambda args: NoDriversBackend())


@pytest.fixture
def requests(monkeypatch: pytest.MonkeyPatch, no_drivers: None) -> list[DeployRequest]:
    """What each apply hands to the deploy the operator runs (`lifecycle.deploy.deploy_job`)."""
    import airflow_provider_kafkaspark.lifecycle.deploy as deploy

    seen: list[DeployRequest] = []

    def recorded(backend: Any, request: DeployRequest) -> dict[str, Any]:
        seen.append(request)
        fields = ("action", "job_name", "status", "spec_hash", "reason")
        return {**dict.fromkeys(fields, "-"), "timings": {}}

    monkeypatch.setattr(deploy, "deploy_job", recorded)
    return seen


@pytest.mark.parametrize(("flags", "warm"), [((), False), (("--warm-handover",), True)])
def test_apply_passes_the_warm_handover_to_the_operators_deploy(
    tmp_path: Path, requests: list[DeployRequest], flags: tuple[str, ...], warm: bool
) -> None:
    spec, _ = spec_file(tmp_path)
    assert main(apply_args(spec, tmp_path, *flags)) == 0
    assert requests[0].policy.warm_handover is warm
    assert requests[0].policy.upgrade_mode is UpgradeMode.SAVEPOINT


def test_the_warm_handover_in_another_mode_is_taken_as_the_operator_takes_it(
    tmp_path: Path, requests: list[DeployRequest], capsys: pytest.CaptureFixture[str]
) -> None:
    # The operator accepts warm_handover=True with any mode and hands over in savepoint
    # upgrades only (lifecycle/upgrade.py); the CLI says so instead of refusing.
    spec, _ = spec_file(tmp_path)
    assert main(apply_args(spec, tmp_path, "--mode", "last-state", "--warm-handover")) == 0
    assert requests[0].policy.warm_handover is True
    err = capsys.readouterr().err
    assert "--warm-handover applies to --mode savepoint only" in err


def test_each_apply_holds_the_deployment_under_a_name_of_its_own(
    tmp_path: Path, requests: list[DeployRequest]
) -> None:
    spec, _ = spec_file(tmp_path)
    assert main(apply_args(spec, tmp_path)) == 0
    assert main(apply_args(spec, tmp_path)) == 0
    first, second = (r.by for r in requests)
    assert first != second
    for by in (first, second):
        holder = CliHolder.parse(by)
        assert holder is not None and holder.pid == os.getpid(), by
        assert (holder.user, holder.host) == (getpass.getuser(), socket.gethostname())
        assert by.startswith(f"cli:{getpass.getuser()}@{socket.gethostname()}:{os.getpid()}-")


def test_a_cli_holder_reads_back_and_other_holders_are_not_one() -> None:
    holder = CliHolder("ana", "host-1.example", 4242, "0a1b2c")
    assert str(holder) == "cli:ana@host-1.example:4242-0a1b2c"
    assert CliHolder.parse(str(holder)) == holder
    assert CliHolder.this_apply() != CliHolder.this_apply()
    assert CliHolder.parse("cli:ana@host-1.example") is None  # before applies had their own
    assert CliHolder.parse("airflow:dag.deploy:manual__2026") is None
    assert CliHolder.parse(None) is None


ME = CliHolder("ana", "h1", 100, "aaaaaa")


def held(holder: str | None, status: DeploymentStatus = DeploymentStatus.UPGRADING) -> Deployment:
    rec = SpecRecord("sha256:abc", {"job_name": "clicks"})
    return Deployment("clicks", status, UpgradeMode.SAVEPOINT, rec, rec, holder=holder)


@pytest.mark.parametrize(
    ("deployment", "taken_up"),
    [
        (None, False),
        (held(None, DeploymentStatus.STABLE), False),
        # An apply of this user on this host whose process is gone (Ctrl-C, a closed terminal).
        (held("cli:ana@h1:7-bbbbbb"), True),
        (held("cli:ana@h1:7-bbbbbb", DeploymentStatus.ROLLING_BACK), True),
        # Still running (this process's id: another apply in it), or of another host or
        # user (whose processes this host cannot see or are not this user's to take up).
        (held("cli:ana@h1:8-bbbbbb"), False),
        (held("cli:ana@h1:100-bbbbbb"), False),
        (held("cli:ana@h2:7-bbbbbb"), False),
        (held("cli:bob@h1:7-bbbbbb"), False),
        # Whether an apply of an earlier release, or a task, still runs cannot be told.
        (held("cli:ana@h1"), False),
        (held("airflow:d.deploy:run1"), False),
    ],
)
def test_only_an_upgrade_whose_apply_has_ended_here_is_taken_up(
    deployment: Deployment | None, taken_up: bool
) -> None:
    found = left_by_ended_apply(deployment, ME, alive=lambda pid: pid in (8, 100))
    assert (found is not None) is taken_up
    if taken_up:
        assert deployment is not None and found == deployment.holder


@dataclass
class Upgrades:
    """The upgrades the real deploy ran: who held each, and what runs while one holds the
    deployment (the next entry of `during`)."""

    holders: list[str] = field(default_factory=list)
    during: list[Callable[[], None]] = field(default_factory=list)


@pytest.fixture
def upgrades(monkeypatch: pytest.MonkeyPatch, no_drivers: None) -> Upgrades:
    """The real deploy over the record on disk with a driver found running; the upgrade
    (`lifecycle.upgrade.upgrade`) holds the deployment as the real one does, without Spark."""
    import airflow_provider_kafkaspark.lifecycle.deploy as deploy
    import airflow_provider_kafkaspark.lifecycle.upgrade as upgrade

    seen = Upgrades()

    def holding(ctx: DeployContext, why: str) -> dict[str, Any]:
        ctx.move(DeploymentStatus.UPGRADING, f"upgrade: {why}", desired=ctx.desired)
        seen.holders.append(ctx.request.by)
        if seen.during:
            seen.during.pop(0)()
        ctx.move(DeploymentStatus.STABLE, "health healthy (test)", stable=ctx.desired)
        return {"since_batch": None}

    monkeypatch.setattr(deploy, "driver_present", lambda checkpoint: True)
    monkeypatch.setattr(upgrade, "upgrade", holding)
    return seen


def test_a_second_apply_while_the_first_upgrades_is_refused(
    tmp_path: Path, upgrades: Upgrades, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, checkpoint = spec_file(tmp_path)
    second: list[int] = []
    # The same person on the same host runs a second apply while the first upgrades.
    upgrades.during.append(lambda: second.append(main(apply_args(spec, tmp_path))))
    first = main(apply_args(spec, tmp_path))
    assert second == [1], "the second apply took over the first one's upgrade"
    assert first == 0
    assert len(upgrades.holders) == 1
    err = capsys.readouterr().err
    assert f"is UPGRADING, held by {upgrades.holders[0]}; wait for it to end" in err
    deployment = DeploymentFile(checkpoint).read()
    assert deployment is not None and deployment.status is DeploymentStatus.STABLE
    assert {t.by for t in deployment.history} == {upgrades.holders[0]}


def test_an_apply_takes_up_the_upgrade_an_ended_apply_left(
    tmp_path: Path, upgrades: Upgrades
) -> None:
    spec, checkpoint = spec_file(tmp_path)
    gone = subprocess.Popen(["true"])  # a process id of this host whose process has ended
    gone.wait()
    left = f"cli:{getpass.getuser()}@{socket.gethostname()}:{gone.pid}-bbbbbb"
    DeploymentFile(checkpoint).write(
        held(None, DeploymentStatus.STABLE).moved(
            DeploymentStatus.UPGRADING, "upgrade (test)", by=left, at_ms=1
        )
    )
    assert main(apply_args(spec, tmp_path)) == 0
    deployment = DeploymentFile(checkpoint).read()
    assert deployment is not None and deployment.status is DeploymentStatus.STABLE
    taken = deployment.history[-3]
    assert taken.status is DeploymentStatus.UPGRADING and taken.by == upgrades.holders[0]
    assert taken.reason == f"taken up from {left}: its process has ended"
