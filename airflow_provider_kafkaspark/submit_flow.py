"""A submit, observed, decided and then acted on, in one place for the operators and the CLI:
observe the checkpoint's lease, decide what `if_running` asks for, probe the bootstrap servers
and the topics, restore a savepoint if asked, and only then start the driver through the
deployment backend (local processes, a standalone cluster, YARN)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from airflow_provider_kafkaspark.backends.base import JobBackend, SubmitOptions
from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import (
    InvalidArgumentError,
    JobSkippedError,
    NoLiveBootstrapError,
)
from airflow_provider_kafkaspark.handover import hand_over, retire_standby
from airflow_provider_kafkaspark.lifecycle import (
    IF_RUNNING,
    JobRunningError,
    live_first,
    live_lease,
    restore_for_submit,
    stop_job,
    submit_job,
    with_connection,
)

log = logging.getLogger(__name__)


class BackendKind(str, Enum):
    LOCAL = "local"
    STANDALONE = "standalone"
    YARN = "yarn"


def backend_kind(master: str, deploy_mode: str | None) -> BackendKind:
    """Which backend runs a driver for a `spark` connection's master and deploy mode. A Python
    driver in cluster deploy mode runs on YARN only here: a standalone master cannot run one,
    and Kubernetes is not supported yet (not tested on a cluster)."""
    if deploy_mode == "cluster":
        if master == "yarn":
            return BackendKind.YARN
        raise InvalidArgumentError(
            f"cluster deploy mode with master {master!r}: supported on YARN only (a standalone "
            f"master cannot run a Python driver in cluster mode; Kubernetes is not supported "
            f"yet); use deploy-mode client, or a YARN connection"
        )
    if deploy_mode not in (None, "", "client"):
        raise InvalidArgumentError(f"deploy mode {deploy_mode!r} is not 'client' or 'cluster'")
    return BackendKind.STANDALONE if master.startswith("spark://") else BackendKind.LOCAL


def deployment_backend(
    master: str,
    deploy_mode: str | None = None,
    *,
    spark_conn_id: str | None = None,
    jars: str | None = None,
) -> JobBackend:
    """The backend for a master and deploy mode (`backend_kind`); YARN submits through the
    `spark` connection they came from."""
    from airflow_provider_kafkaspark.backends.local import LocalBackend, StandaloneBackend
    from airflow_provider_kafkaspark.backends.yarn import YarnBackend

    kind = backend_kind(master, deploy_mode)
    if kind is BackendKind.YARN:
        return YarnBackend(spark_conn_id, jars=jars)
    if kind is BackendKind.STANDALONE:
        return StandaloneBackend(master)
    return LocalBackend(master)


class RunningDecision(str, Enum):
    SUBMIT = "submit"
    FAIL = "fail"
    SKIP = "skip"
    REPLACE = "replace"


def decide_if_running(lease: Lease | None, if_running: str) -> RunningDecision:
    """What a submit does about a live driver on the checkpoint."""
    if if_running not in IF_RUNNING:
        raise InvalidArgumentError(f"if_running={if_running!r} is not one of {list(IF_RUNNING)}")
    if lease is None:
        return RunningDecision.SUBMIT
    return RunningDecision(if_running)


@dataclass(frozen=True)
class RestoreRequest:
    savepoint_root: str
    savepoint_ref: str
    mode: str = "checkpoint"


@dataclass(frozen=True)
class SubmitRequest:
    """A submit's inputs once connections are read: the spec (with the connection's servers
    and settings), the in-process Kafka client config (`repr` hides it: it may hold secrets),
    and what to do about a running driver, the probe and a restore."""

    spec: JobSpec
    kafka_client: dict[str, Any] = field(repr=False)
    options: SubmitOptions
    if_running: str = "fail"
    probe_bootstrap: bool = True
    probe_timeout_s: float = 5.0
    restore: RestoreRequest | None = None
    # A standby's handle (`handover.submit_standby`): handed the checkpoint instead of a
    # submit when it runs the same spec and lives; stopped when the submit fails.
    standby: dict[str, Any] | None = None
    # For messages: where the servers came from (a connection id, a file).
    servers_from: str = "the job spec"


def submit_streaming_job(backend: JobBackend, request: SubmitRequest) -> dict[str, Any]:
    """Observe, decide, act; returns the submit's handle (`lifecycle.submit_job`) with the
    dead bootstrap servers and the restore's summary added. A standby given with the request
    that is not handed over is stopped when the submit fails."""
    try:
        return _submit_streaming_job(backend, request)
    except BaseException:
        if request.standby is not None:
            retire_standby(request.standby)
        raise


def _submit_streaming_job(backend: JobBackend, request: SubmitRequest) -> dict[str, Any]:
    from airflow_provider_kafkaspark.core.spec.job_code import check_topics_exist

    spec = request.spec
    lease = live_lease(spec.checkpoint_location)
    decision = decide_if_running(lease, request.if_running)
    if lease is not None:
        message = f"job {spec.job_name} is running: {lease.describe()}"
        if decision is RunningDecision.FAIL:
            raise JobRunningError(message + " (if_running='fail')")
        if decision is RunningDecision.SKIP:
            raise JobSkippedError(message + " (if_running='skip')")
        log.info("%s: stopping it first (if_running='replace')", message)
        stop_job(
            spec.checkpoint_location,
            requested_by=request.options.submitted_by,
            reason="replaced by a new submit",
            drain_timeout_s=spec.drain_timeout_s,
        )

    dead: list[str] = []
    if request.probe_bootstrap:
        from airflow_provider_kafkaspark.core.kafka.bootstrap_probe import probe_bootstrap

        report = probe_bootstrap(request.kafka_client, timeout_s=request.probe_timeout_s)
        dead = list(report.dead)
        if not report.healthy:
            raise NoLiveBootstrapError(
                f"no bootstrap server of {request.servers_from} answers: "
                + "; ".join(f"{s.server}: {s.reason}" for s in report.servers)
            )
        if dead:
            log.warning(
                "bootstrap servers that are dead or not cluster members: %s "
                "(submitting anyway with the live ones listed first)",
                ", ".join(dead),
            )
            servers = live_first(spec.source.bootstrap_servers, dead)
            spec = with_connection(spec, servers, spec.kafka_config)
        check_topics_exist(spec, request.kafka_client)

    restored: dict[str, Any] | None = None
    if request.restore is not None:
        spec, restored = restore_for_submit(
            spec,
            savepoint_root=request.restore.savepoint_root,
            savepoint_ref=request.restore.savepoint_ref,
            mode=request.restore.mode,
            kafka_config=request.kafka_client,
        )
        log.info("restored for submit: %s", restored)
    handle = None
    if request.standby is not None:
        handle = hand_over(spec, request.standby, request.options)
    if handle is None:
        handle = submit_job(backend, spec, request.options)
    handle.update(dead_bootstrap_servers=dead, restored=restored)
    return handle
