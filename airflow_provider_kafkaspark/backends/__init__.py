"""Deployment backends: one per cluster manager (local processes, a Spark standalone cluster,
YARN, Kubernetes), each turning a job reference into status and kill calls in that manager's
own terms.

The one factory: `make_backend` builds each kind; a submit asks for the kind a master and
deploy mode pick (`deployment_backend`), a stop or a status for the kind a reference names
(`backend_for`)."""

from __future__ import annotations

from enum import Enum

from airflow_provider_kafkaspark.backends.base import JobBackend, JobStatus
from airflow_provider_kafkaspark.core.cluster.job_ref import (
    JobRef,
    KubernetesJobRef,
    StandaloneJobRef,
    YarnJobRef,
)
from airflow_provider_kafkaspark.errors import InvalidArgumentError


class BackendKind(str, Enum):
    LOCAL = "local"
    STANDALONE = "standalone"
    YARN = "yarn"
    KUBERNETES = "kubernetes"


def backend_kind(master: str, deploy_mode: str | None) -> BackendKind:
    """Which backend runs a driver for a `spark` connection's master and deploy mode. A Python
    driver in cluster deploy mode runs on YARN and Kubernetes: a standalone master cannot run
    one. A Kubernetes master needs cluster mode: a client-mode driver would be a process of the
    task's own host (on Kubernetes, the Airflow worker's pod, deleted when the task ends)."""
    if deploy_mode not in (None, "", "client", "cluster"):
        raise InvalidArgumentError(f"deploy mode {deploy_mode!r} is not 'client' or 'cluster'")
    if master.startswith("k8s://"):
        if deploy_mode != "cluster":
            raise InvalidArgumentError(
                f"master {master!r} in {deploy_mode or 'client'} deploy mode: a driver on "
                f"Kubernetes runs in cluster deploy mode (set the spark connection's extra "
                f'"deploy-mode": "cluster"), never as a process of the submitting host'
            )
        return BackendKind.KUBERNETES
    if deploy_mode == "cluster":
        if master == "yarn":
            return BackendKind.YARN
        raise InvalidArgumentError(
            f"cluster deploy mode with master {master!r}: supported on YARN and Kubernetes "
            f"(a standalone master cannot run a Python driver in cluster mode); use "
            f"deploy-mode client, or a YARN or k8s:// connection"
        )
    return BackendKind.STANDALONE if master.startswith("spark://") else BackendKind.LOCAL


def make_backend(
    kind: BackendKind,
    master: str,
    *,
    spark_conn_id: str | None = None,
    jars: str | None = None,
    kubernetes_conn_id: str | None = None,
) -> JobBackend:
    """The backend of `kind`. YARN submits through the `spark` connection `spark_conn_id`
    (none needed to observe or kill an application); Kubernetes submits into the namespace of
    that connection's extra, through the `kubernetes` connection `kubernetes_conn_id`; local
    drivers run with `master`."""
    if kind is BackendKind.KUBERNETES:
        from airflow_provider_kafkaspark.backends.kubernetes import KubernetesBackend

        return KubernetesBackend(kubernetes_conn_id=kubernetes_conn_id, spark_conn_id=spark_conn_id)
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
    kubernetes_conn_id: str | None = None,
) -> JobBackend:
    """The backend that starts a driver for a master and deploy mode (`backend_kind`)."""
    kind = backend_kind(master, deploy_mode)
    return make_backend(
        kind,
        master,
        spark_conn_id=spark_conn_id,
        jars=jars,
        kubernetes_conn_id=kubernetes_conn_id,
    )


def backend_for(ref: JobRef) -> JobBackend:
    """The backend that observes and kills what `ref` names (no connection needed; Kubernetes
    through the cncf provider's default access)."""
    if isinstance(ref, KubernetesJobRef):
        return make_backend(BackendKind.KUBERNETES, "k8s://")
    if isinstance(ref, YarnJobRef):
        return make_backend(BackendKind.YARN, "yarn")
    kind = BackendKind.STANDALONE if isinstance(ref, StandaloneJobRef) else BackendKind.LOCAL
    return make_backend(kind, ref.master)


def driver_status(ref: JobRef) -> JobStatus:
    return backend_for(ref).status(ref)


def kill_driver(ref: JobRef) -> None:
    backend_for(ref).force_kill(ref)
