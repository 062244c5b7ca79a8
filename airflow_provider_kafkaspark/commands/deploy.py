"""`kafkaspark deploy apply|status`: the deployment the operator makes real, from a terminal.
`apply` submits, does nothing, or upgrades (with the compatibility check, the health gate and
an automatic rollback), as `DeployStreamingJobOperator` does; `status` prints the record."""

from __future__ import annotations

import argparse
import getpass
import socket
from typing import Any

from airflow_provider_kafkaspark.commands.flags import add_shared, with_example
from airflow_provider_kafkaspark.commands.job import (
    add_driver_arguments,
    prepare_submit,
    result_on_stdout,
)
from airflow_provider_kafkaspark.commands.output import key_values
from airflow_provider_kafkaspark.core.deploy.deployment import UpgradeMode

DEFAULT_HOLDER = "cli"


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
        "kafkaspark deploy apply clicks.json --savepoint-root s3://b/sp",
        "kafkaspark deploy apply clicks.json --mode last-state --spark-conn-id spark_yarn",
    )
    apply.set_defaults(func=result_on_stdout(_apply))

    status = actions.add_parser("status", help="the deployment's record")
    status.add_argument("--checkpoint", required=True, help="the job's checkpoint location")
    add_shared(status)
    with_example(status, "kafkaspark deploy status --checkpoint s3://b/clicks/checkpoint --json")
    status.set_defaults(func=result_on_stdout(_status))


def _apply(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from airflow_provider_kafkaspark.core.health.settings import HealthSettings
    from airflow_provider_kafkaspark.lifecycle.deploy import DeployPolicy, DeployRequest, deploy_job

    prepared = prepare_submit(args)
    policy = DeployPolicy(
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
    ).checked()
    request = DeployRequest(
        spec=prepared.spec,
        given=prepared.given,
        kafka_client=prepared.client,
        options=prepared.options,
        policy=policy,
        by=f"cli:{getpass.getuser()}@{socket.gethostname()}",
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
