"""`kafkaspark job submit|status|stop|acls`: the submit, observation and stop the operators
run, from a terminal. A submit prints the job reference (and writes it with `--ref-out`);
status and stop take it back, as a file or as JSON text. `acls` lists the Kafka ACLs a job's
spec needs."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.commands.flags import add_shared, wants_json, with_example
from airflow_provider_kafkaspark.commands.kafka import kafka_config
from airflow_provider_kafkaspark.commands.output import EXIT_OK, emit_json, key_values
from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.lifecycle.inputs import IF_RUNNING

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.backends.base import JobBackend, SubmitOptions
    from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec


def add_parser(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = groups.add_parser("job", help="submit a streaming job, see its driver, stop it")
    actions = group.add_subparsers(dest="action", required=True)

    submit = actions.add_parser("submit", help="start a job's driver; print its reference")
    add_driver_arguments(submit)
    submit.add_argument("--if-running", choices=IF_RUNNING, default="fail")
    submit.add_argument("--restore-from", default=None, help="a savepoint id, or latest")
    submit.add_argument("--savepoint-root", default=None, help="savepoint root URL")
    submit.add_argument("--restore-mode", default="checkpoint", help="checkpoint|offsets|latest")
    submit.add_argument("--ref-out", default=None, help="also write the reference to this file")
    with_example(
        submit,
        "kafkaspark job submit clicks.json --ref-out clicks.ref.json",
        "kafkaspark job submit clicks.json --spark-conn-id spark_yarn --jars k.jar,s3a.jar",
    )
    submit.set_defaults(func=submit_job)

    status = actions.add_parser("status", help="the driver's state, as its backend sees it")
    _add_job_names(status)
    add_shared(status)
    with_example(
        status,
        "kafkaspark job status clicks.ref.json --json",
        "kafkaspark job status --job clicks --checkpoint s3://b/clicks/checkpoint",
    )
    status.set_defaults(func=job_status)

    stop = actions.add_parser("stop", help="graceful stop through the checkpoint, then a savepoint")
    _add_job_names(stop)
    stop.add_argument("--drain-timeout", type=float, default=120.0, help="seconds to drain")
    stop.add_argument(
        "--force-kill", action="store_true", help="kill the driver after the drain timeout"
    )
    stop.add_argument(
        "--at-batch-boundary",
        action="store_true",
        help="stop once the batch in flight has committed, cutting short one Spark already "
        "planned (its savepoint then restores in checkpoint mode only)",
    )
    stop.add_argument("--savepoint-root", default=None, help="take a savepoint here after")
    add_shared(stop)
    with_example(
        stop,
        "kafkaspark job stop clicks.ref.json --savepoint-root s3://b/sp",
        "kafkaspark job stop --job clicks --checkpoint s3://b/clicks/checkpoint",
    )
    stop.set_defaults(func=stop_job)

    acls = actions.add_parser(
        "acls", help="every Kafka ACL the job needs (docs/kafka-acls.md), or the commands"
    )
    acls.add_argument("spec", help="job spec JSON file")
    acls.add_argument(
        "--principal",
        default=None,
        help="print the kafka-acls.sh commands that grant them to this principal (User:name)",
    )
    acls.add_argument(
        "--command-config", default=None, help="kafka-acls.sh's --command-config, in the commands"
    )
    add_shared(acls)
    with_example(
        acls,
        "kafkaspark job acls clicks.json",
        "kafkaspark job acls clicks.json --principal User:clicks-job --command-config admin.conf",
    )
    acls.set_defaults(func=print_job_acls)


def add_driver_arguments(parser: argparse.ArgumentParser) -> None:
    """The spec file and where its driver runs: what `job submit` and `deploy apply` share."""
    parser.add_argument("spec", help="job spec JSON file")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--master", default="local[2]", help="local[...] or spark://host:port")
    where.add_argument(
        "--spark-conn-id",
        default=None,
        help="an Airflow `spark` connection (master yarn or k8s://..., deploy-mode cluster: "
        "the driver runs in YARN, or as a Kubernetes Job's pod)",
    )
    parser.add_argument(
        "--kubernetes-conn-id",
        default=None,
        help="an Airflow `kubernetes` connection for a k8s:// master (default: "
        "kubernetes_default if defined, else the kubeconfig)",
    )
    parser.add_argument("--jars", default=None, help="jars for spark-submit on YARN (comma list)")
    parser.add_argument(
        "--spark-home",
        default=None,
        help="the Spark whose bin/spark-submit a YARN submit runs (default: SPARK_HOME, PATH, "
        "then this environment's pyspark)",
    )
    parser.add_argument("--workdir", default="/tmp/kafkaspark/jobs", help="local drivers' files")
    parser.add_argument("--max-restarts", type=int, default=3, help="driver restarts allowed")
    parser.add_argument("--no-probe", action="store_true", help="skip the bootstrap probe")
    add_shared(parser, kafka_config_file=True)


def _add_job_names(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "ref",
        nargs="?",
        default=None,
        help="a job reference: a file, or its JSON (default: the one the submit left in the "
        "checkpoint, with --job and --checkpoint)",
    )
    parser.add_argument("--job", default=None, help="the job's name (its spec's job_name)")
    parser.add_argument("--checkpoint", default=None, help="the job's checkpoint location")


Work = Callable[[argparse.Namespace], tuple[dict[str, Any], str]]


def result_on_stdout(work: Work) -> Callable[[argparse.Namespace], int]:
    """Run a command with everything it and the libraries underneath print or log going to
    stderr (Airflow's and botocore's loggers write to stdout, and bind the stream when first
    configured), then print only its result on stdout: JSON with `--json`, text otherwise."""

    def command(args: argparse.Namespace) -> int:
        with contextlib.redirect_stdout(sys.stderr):
            result, text = work(args)
        if wants_json(args):
            emit_json(result)
        else:
            print(text)
        return EXIT_OK

    return command


def read_ref(text: str) -> JobRef:
    """A reference from a file, or from JSON text (what `submit --json` prints as job_ref)."""
    from airflow_provider_kafkaspark.core.cluster.job_ref import job_ref_from_dict

    where = "job reference"
    raw = text
    if not text.lstrip().startswith("{"):
        path = Path(text)
        try:
            raw = path.read_text()
        except OSError as exc:
            raise InvalidInputError(
                f"{path}: cannot read the job reference ({exc.strerror})"
            ) from None
        where = str(path)
    try:
        value = json.loads(raw)
    except ValueError:
        raise InvalidInputError(f"{where}: not JSON") from None
    if isinstance(value, dict) and "job_ref" in value:
        value = value["job_ref"]  # a whole submit handle
    return job_ref_from_dict(value, where)


def job_ref_of(args: argparse.Namespace) -> tuple[JobRef | None, str, str]:
    """(reference, job name, checkpoint) of the job a status or stop is for: the reference
    given, else the one the submit recorded in the checkpoint's submitted marker (read as the
    stop operator's `begin_stop` reads it). None when the marker predates references: the
    checkpoint alone still reaches the driver."""
    from airflow_provider_kafkaspark.core.cluster.job_ref import check_ref_names
    from airflow_provider_kafkaspark.core.control.folder import SUBMITTED_FILE, ControlFolder
    from airflow_provider_kafkaspark.errors import InvalidArgumentError
    from airflow_provider_kafkaspark.lifecycle.observe import marker_ref

    if args.ref is not None:
        ref = read_ref(args.ref)
        job, checkpoint = args.job or ref.job_name, args.checkpoint or ref.checkpoint
        check_ref_names(ref, job_name=job, checkpoint=checkpoint, where="the job reference")
        return ref, job, checkpoint
    if not (args.job and args.checkpoint):
        raise InvalidArgumentError(
            "name the job: a job reference (the submit's --ref-out file, or its JSON), or "
            "--job NAME and --checkpoint URL"
        )
    checkpoint = args.checkpoint.rstrip("/") or args.checkpoint
    where = f"{checkpoint}/_kafkaspark/{SUBMITTED_FILE}"
    marker = ControlFolder(checkpoint).read_submitted()
    if marker is None:
        raise InvalidArgumentError(
            f"{where}: not there, so no submit of job {args.job!r} used this checkpoint; "
            f"check --checkpoint, or give the submit's job reference"
        )
    if marker.job_name != args.job:
        raise InvalidArgumentError(
            f"{where} names job {marker.job_name!r}, not {args.job!r}: check --job and --checkpoint"
        )
    recorded = marker_ref(marker, checkpoint)
    if recorded is not None and recorded.checkpoint.rstrip("/") != checkpoint:
        raise InvalidArgumentError(
            f"{where}: its job reference is for checkpoint {recorded.checkpoint}, not {checkpoint}"
        )
    return recorded, args.job, recorded.checkpoint if recorded is not None else checkpoint


def _backend(args: argparse.Namespace) -> JobBackend:
    from airflow_provider_kafkaspark.backends import BackendKind, backend_kind, deployment_backend
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

    master, mode = args.master, None
    if args.spark_conn_id:
        from airflow_provider_kafkaspark.commands.spark_submit import (
            connection_binary,
            use_spark_submit,
        )

        # Before the official hook reads the connection: it raises a bare ValueError for the
        # extras it refuses, and finds a missing binary only once it runs it, after the probe.
        binary = connection_binary(args.spark_conn_id)
        master, mode = KafkaSparkHook(spark_conn_id=args.spark_conn_id).spark_connection()
        if backend_kind(master, mode) is BackendKind.YARN:
            found = use_spark_submit(binary, args.spark_home)
            print(f"spark-submit: {found.path} (from {found.source})")
    return deployment_backend(
        master,
        mode,
        spark_conn_id=args.spark_conn_id,
        jars=args.jars,
        kubernetes_conn_id=args.kubernetes_conn_id,
    )


@dataclass(frozen=True)
class PreparedSubmit:
    """What a submit and a deploy from a terminal share: the spec as given (python_path
    resolved against its file's folder, code checked), the spec with the client settings,
    the in-process client config, the backend and the submit options."""

    given: JobSpec
    spec: JobSpec
    client: dict[str, Any]
    backend: JobBackend
    options: SubmitOptions


def prepare_submit(args: argparse.Namespace) -> PreparedSubmit:
    from airflow_provider_kafkaspark.backends.base import SubmitOptions
    from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
    from airflow_provider_kafkaspark.core.spec.job_code import (
        check_code_visible,
        resolve_python_path,
    )
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
    from airflow_provider_kafkaspark.lifecycle.inputs import with_connection

    given = JobSpec.load(args.spec)
    given = resolve_python_path(given, str(Path(args.spec).resolve().parent))
    check_code_visible(given)
    args.bootstrap_servers = given.source.bootstrap_servers
    client = kafka_config(args)
    settings = {k: str(v) for k, v in client.items() if k != "bootstrap.servers"}
    spec = with_connection(
        given,
        given.source.bootstrap_servers,
        {**given.kafka_config, **settings},
        f"Kafka settings of {args.spec} and --kafka-config-file",
    )
    backend = _backend(args)
    # A driver elsewhere (YARN) gets this terminal's AWS variables; a local one inherits them.
    aws = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    options = SubmitOptions(
        workdir=args.workdir,
        submitted_by=f"cli:{os.environ.get('USER', 'unknown')}",
        restart_policy=RestartPolicy(max_restarts=args.max_restarts),
        env=aws if backend.name == "yarn" else {},
    )
    return PreparedSubmit(given, spec, client, backend, options)


def _submit(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from airflow_provider_kafkaspark.errors import InvalidArgumentError
    from airflow_provider_kafkaspark.lifecycle.submit import (
        RestoreRequest,
        SubmitRequest,
        submit_streaming_job,
    )

    if args.restore_from and not args.savepoint_root:
        raise InvalidArgumentError("--restore-from needs --savepoint-root")
    prepared = prepare_submit(args)
    request = SubmitRequest(
        spec=prepared.spec,
        kafka_client=prepared.client,
        options=prepared.options,
        if_running=args.if_running,
        probe_bootstrap=not args.no_probe,
        restore=RestoreRequest(args.savepoint_root, args.restore_from, args.restore_mode)
        if args.restore_from
        else None,
    )
    handle = submit_streaming_job(prepared.backend, request)
    if args.ref_out:
        Path(args.ref_out).write_text(json.dumps(handle["job_ref"], indent=2) + "\n")
    return handle, key_values(_summary(handle))


def _summary(handle: dict[str, Any]) -> dict[str, Any]:
    keys = ("job_name", "mode", "checkpoint", "since_batch", "pid", "log_file", "application_id")
    return {k: handle[k] for k in keys if handle.get(k) is not None} | {
        "job_ref": handle["job_ref"]
    }


def _status(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from airflow_provider_kafkaspark.backends import driver_status
    from airflow_provider_kafkaspark.core.control.folder import ControlFolder

    ref, job, checkpoint = job_ref_of(args)
    if ref is not None:
        status = driver_status(ref).to_dict()
    else:
        # A marker from before references were recorded: the lease alone tells.
        status = {"job_name": job, "backend": None, "alive": None, "state": "no job reference"}
    control = ControlFolder(checkpoint)
    lease = control.live_lease()
    stopped = control.read_stopped()
    status["lease"] = lease.describe() if lease else None
    status["stopped"] = stopped.describe() if stopped else None
    return status, key_values(status)


def _stop(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop
    from airflow_provider_kafkaspark.lifecycle.stop import stop_job as stop
    from airflow_provider_kafkaspark.versions import SPARK_VERSION

    ref, job, checkpoint = job_ref_of(args)
    print(f"stopping {job}: a stop request in {checkpoint}")
    stopped = stop(
        checkpoint,
        requested_by=f"cli:{os.environ.get('USER', 'unknown')}",
        reason="kafkaspark job stop",
        drain_timeout_s=args.drain_timeout,
        ref=ref,
        allow_force_kill=args.force_kill,
        at_batch_boundary=args.at_batch_boundary,
    )
    result: dict[str, Any] = {
        "job_name": job,
        "stopped": stopped.describe() if stopped else "no driver was running, or it was killed",
    }
    if args.savepoint_root:
        manifest = savepoint_after_stop(
            checkpoint, args.savepoint_root, job, spark_version=SPARK_VERSION
        )
        result["savepoint_id"] = manifest.savepoint_id
    return result, key_values(result)


def print_job_acls(args: argparse.Namespace) -> int:
    """The spec's ACLs (`core/kafka/acls.py`): a table, or with `--principal` the
    `kafka-acls.sh` lines that grant them; `--json` both."""
    from airflow_provider_kafkaspark.core.kafka.acls import acl_table, check_principal, job_acls
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

    principal = check_principal(args.principal) if args.principal else None
    acls = job_acls(JobSpec.load(args.spec))
    config = args.command_config
    if wants_json(args):
        emit_json(
            [
                {
                    **acl.to_dict(),
                    **(
                        {"command": acl.command(principal, command_config=config)}
                        if principal
                        else {}
                    ),
                }
                for acl in acls
            ]
        )
    elif principal:
        print("\n".join(acl.command(principal, command_config=config) for acl in acls))
    else:
        print(acl_table(acls))
    return EXIT_OK


submit_job = result_on_stdout(_submit)
job_status = result_on_stdout(_status)
stop_job = result_on_stdout(_stop)
