"""`kafkaspark deploy apply|status`: the deployment the operator makes real, from a terminal.
`apply` submits, does nothing, or upgrades (with the compatibility check, the health gate and
an automatic rollback), as `DeployStreamingJobOperator` does; `status` prints the record.

Each apply holds the deployment under a name of its own (`CliHolder`: user, host, process,
a random part), so that a second apply, even by the same person on the same host, is refused
while the first upgrades. The one holder an apply takes over is that of an apply of the same
user on this host whose process has ended (interrupted mid-upgrade): this host can tell."""

from __future__ import annotations

import argparse
import getpass
import os
import re
import secrets
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.commands.flags import add_shared, with_example
from airflow_provider_kafkaspark.commands.job import (
    add_driver_arguments,
    prepare_submit,
    result_on_stdout,
)
from airflow_provider_kafkaspark.commands.output import key_values
from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from airflow_provider_kafkaspark.core.deploy.deployment import UpgradeMode

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.core.deploy.deployment import Deployment
    from airflow_provider_kafkaspark.lifecycle.deploy import DeployPolicy


def add_parser(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = groups.add_parser(
        "deploy", help="make a job run a desired spec: submit, no-op, upgrade, roll back"
    )
    actions = group.add_subparsers(dest="action", required=True)

    apply = actions.add_parser("apply", help="deploy a spec (submit, no-op or upgrade)")
    add_driver_arguments(apply)
    apply.add_argument(
        "--mode",
        choices=[m.value for m in UpgradeMode],
        default=UpgradeMode.SAVEPOINT.value,
        help="how a running job is upgraded (default savepoint)",
    )
    apply.add_argument("--savepoint-root", default=None, help="savepoint root URL")
    check = apply.add_mutually_exclusive_group()
    check.add_argument(
        "--no-check", action="store_true", help="skip the compatibility check before an upgrade"
    )
    check.add_argument(
        "--proceed-without-check",
        action="store_true",
        help="upgrade even when the check cannot run (no committed batch yet)",
    )
    apply.add_argument(
        "--warm-handover",
        action="store_true",
        help="in a savepoint upgrade, start the new driver as a standby while the old one runs "
        "(two drivers of the job for a while); other modes start it after the stop",
    )
    apply.add_argument("--health-timeout", type=float, default=300.0, help="seconds")
    apply.add_argument("--min-new-batches", type=int, default=2, help="for the health gate")
    apply.add_argument("--no-rollback", action="store_true", help="fail instead of rolling back")
    apply.add_argument("--max-savepoints", type=int, default=10, help="retention: newest N")
    apply.add_argument("--max-savepoint-age", type=float, default=None, help="retention: seconds")
    apply.add_argument(
        "--restore-policy",
        choices=("checkpoint", "savepoint"),
        default="checkpoint",
        help="what a submit with nothing running starts from",
    )
    apply.add_argument(
        "--retry-rolled-back", action="store_true", help="try a spec rolled back from again"
    )
    apply.add_argument(
        "--restart-nonce", default=None, help="a new value restarts an unchanged spec"
    )
    with_example(
        apply,
        "kafkaspark deploy apply clicks.json --savepoint-root s3://b/sp --warm-handover",
        "kafkaspark deploy apply clicks.json --mode last-state --spark-conn-id spark_yarn",
    )
    apply.set_defaults(func=result_on_stdout(_apply))

    status = actions.add_parser("status", help="the deployment's record")
    status.add_argument("--checkpoint", required=True, help="the job's checkpoint location")
    add_shared(status)
    with_example(status, "kafkaspark deploy status --checkpoint s3://b/clicks/checkpoint --json")
    status.set_defaults(func=result_on_stdout(_status))


_CLI_HOLDER = re.compile(
    r"cli:(?P<user>[^@:\s]+)@(?P<host>[^:\s]+):(?P<pid>[0-9]+)-(?P<nonce>[0-9a-f]+)"
)


@dataclass(frozen=True)
class CliHolder:
    """Who an apply holds the deployment as: `cli:<user>@<host>:<pid>-<random>`, in the
    record, its history and the stop request the upgrade writes. The process id lets a later
    apply on this host tell an interrupted apply from a running one; the random part tells
    two applies apart when a process id comes round again."""

    user: str
    host: str
    pid: int
    nonce: str

    def __str__(self) -> str:
        return f"cli:{self.user}@{self.host}:{self.pid}-{self.nonce}"

    @classmethod
    def this_apply(cls) -> CliHolder:
        return cls(_user(), socket.gethostname(), os.getpid(), secrets.token_hex(3))

    @classmethod
    def parse(cls, holder: str | None) -> CliHolder | None:
        """The apply `holder` names; None for another holder (an Airflow task, an apply of a
        release whose holder named no process)."""
        match = _CLI_HOLDER.fullmatch(holder or "")
        if match is None:
            return None
        return cls(match["user"], match["host"], int(match["pid"]), match["nonce"])


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name and no passwd entry (a container's uid)
        return f"uid{os.getuid()}"


def left_by_ended_apply(
    deployment: Deployment | None, me: CliHolder, alive: Callable[[int], bool] = pid_alive
) -> str | None:
    """The holder of the upgrade (or rollback) in progress in `deployment` when an apply of
    `me`'s user on `me`'s host left it and its process has ended; else None. Another host's
    process ids mean nothing here, and whether a task or another user's apply still runs is
    not this apply's to judge: those stay refused (`core/deploy/decide.py`)."""
    if deployment is None or not deployment.status.in_progress:
        return None
    held = CliHolder.parse(deployment.holder)
    if held is None or (held.user, held.host) != (me.user, me.host) or alive(held.pid):
        return None
    return deployment.holder


def _take_up_ended_apply(checkpoint: str, me: CliHolder) -> None:
    """Hold the deployment as `me` when an ended apply of this user and host held it, as a
    retried Airflow task takes up its own upgrade. The write is conditional: of two applies
    taking it up, one is refused (`DeploymentConflictError`)."""
    from airflow_provider_kafkaspark.core.control.lease import now_ms
    from airflow_provider_kafkaspark.core.deploy.record_file import DeploymentFile

    file = DeploymentFile(checkpoint)
    current = file.read()
    left = left_by_ended_apply(current, me)
    if current is None or left is None:
        return
    reason = f"taken up from {left}: its process has ended"
    file.write(current.moved(current.status, reason, by=str(me), at_ms=now_ms()))
    print(f"kafkaspark: {current.job_name}: {reason}", file=sys.stderr)


def _policy(args: argparse.Namespace) -> DeployPolicy:
    from airflow_provider_kafkaspark.core.health.settings import HealthSettings
    from airflow_provider_kafkaspark.lifecycle.deploy import DeployPolicy

    return DeployPolicy(
        upgrade_mode=UpgradeMode.parse(args.mode),
        savepoint_root=args.savepoint_root,
        compat_check=False if args.no_check else None,
        proceed_without_check=args.proceed_without_check,
        health=HealthSettings.checked(
            "deploy", min_new_batches=args.min_new_batches, window_s=30.0, poll_interval_s=2.0
        ),
        health_timeout_s=args.health_timeout,
        rollback=not args.no_rollback,
        max_savepoints=args.max_savepoints,
        max_savepoint_age_s=args.max_savepoint_age,
        restore_policy=args.restore_policy,
        retry_rolled_back=args.retry_rolled_back,
        warm_handover=args.warm_handover,
    ).checked()


def _apply(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from airflow_provider_kafkaspark.lifecycle.deploy import DeployRequest, deploy_job

    prepared = prepare_submit(args)
    policy = _policy(args)
    if policy.warm_handover and policy.upgrade_mode is not UpgradeMode.SAVEPOINT:
        # The operator takes warm_handover=True in any mode and hands over in savepoint
        # upgrades only; a person at a terminal is told rather than left to find out.
        print(
            f"kafkaspark: note: --warm-handover applies to --mode savepoint only; a "
            f"{policy.upgrade_mode.value} upgrade starts the new driver after the stop",
            file=sys.stderr,
        )
    me = CliHolder.this_apply()
    _take_up_ended_apply(prepared.spec.checkpoint_location, me)
    request = DeployRequest(
        spec=prepared.spec,
        given=prepared.given,
        kafka_client=prepared.client,
        options=prepared.options,
        policy=policy,
        by=str(me),
        restart_nonce=args.restart_nonce,
        probe_bootstrap=not args.no_probe,
    )
    result = deploy_job(prepared.backend, request)
    shown = {k: result[k] for k in ("action", "job_name", "status", "spec_hash", "reason")}
    shown |= {k: v for k, v in result["timings"].items()}
    return result, key_values(shown)


def _status(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from airflow_provider_kafkaspark.errors import InvalidArgumentError
    from airflow_provider_kafkaspark.lifecycle.deploy import deployment_status

    deployment = deployment_status(args.checkpoint)
    if deployment is None:
        raise InvalidArgumentError(
            f"{args.checkpoint.rstrip('/')}/_kafkaspark/deployment.json: not there: no deploy "
            f"has used this checkpoint"
        )
    summary = deployment.summary()
    lines = {k: v for k, v in summary.items() if k != "history"}
    history = "\n".join(
        f"  {t['at_ms']} {t['status']:<12} {t['reason']}" for t in summary["history"]
    )
    return summary, key_values(lines) + "\nhistory:\n" + history
