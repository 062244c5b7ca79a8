"""Deployment backends: one per cluster manager (local processes, a Spark standalone cluster,
YARN), each turning a job reference into status and kill calls in that manager's own terms.

The one factory: `make_backend` builds each kind; a submit asks for the kind a master and
deploy mode pick (`deployment_backend`), a stop or a status for the kind a reference names
(`backend_for`)."""

from __future__ import annotations

from enum import Enum

from airflow_provider_kafkaspark.backends.base import JobBackend, JobStatus
from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef, StandaloneJobRef, YarnJobRef
from airflow_provider_kafkaspark.errors import InvalidArgumentError


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


def make_backend(
    kind: BackendKind,
    master: str,
    *,
    spark_conn_id: str | None = None,
    jars: str | None = None,
) -> JobBackend:
    """The backend of `kind`. YARN submits through the `spark` connection `spark_conn_id`
    (none needed to observe or kill an application); local drivers run with `master`."""
    if kind is BackendKind.YARN:
        from airflow_provider_kafkaspark.backends.yarn import YarnBackend

        return YarnBackend(spark_conn_id, jars=jars)
    from airflow_provider_kafkaspark.backends.local import LocalBackend, StandaloneBackend

    if kind is BackendKind.STANDALONE:
        return StandaloneBackend(master)
    return LocalBackend(master)


def deployment_backend(
    master: str,
    deploy_mode: str | None = None,
    *,
    spark_conn_id: str | None = None,
    jars: str | None = None,
) -> JobBackend:
    """The backend that starts a driver for a master and deploy mode (`backend_kind`)."""
    kind = backend_kind(master, deploy_mode)
    return make_backend(kind, master, spark_conn_id=spark_conn_id, jars=jars)


def backend_for(ref: JobRef) -> JobBackend:
    """The backend that observes and kills what `ref` names (no connection needed)."""
    if isinstance(ref, YarnJobRef):
        return make_backend(BackendKind.YARN, "yarn")
    kind = BackendKind.STANDALONE if isinstance(ref, StandaloneJobRef) else BackendKind.LOCAL
    return make_backend(kind, ref.master)


def driver_status(ref: JobRef) -> JobStatus:
    return backend_for(ref).status(ref)


def kill_driver(ref: JobRef) -> None:
    backend_for(ref).force_kill(ref)
