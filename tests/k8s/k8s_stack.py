"""What the Kubernetes tests need of the local cluster besides the launcher: an API client
from its kubeconfig, a namespace with the driver's service account and RBAC (the README's
`docs/kubernetes/driver-rbac.yaml`), the pods of a Job, and the driver process of a pod as
this machine sees it (a pod's processes are processes of the node, here this host)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.core.cluster.job_ref import KubernetesJobRef
from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster
from kafkaspark_devstack.k8s.namespace import (
    account_kubeconfig,
    admin_api,
    prepare_namespace,
)

NAMESPACE = "kafkaspark-e2e"
RUNNER = b"airflow_provider_kafkaspark.spark.runner"


def kube_api(k8s: LocalKubernetesCluster) -> Any:
    return admin_api(k8s.kubeconfig)


def make_namespace(k8s: LocalKubernetesCluster, namespace: str = NAMESPACE) -> None:
    """The namespace with the README's RBAC for the drivers and for the Airflow side (once)."""
    prepare_namespace(k8s.kubeconfig, namespace)


def airflow_kubeconfig(
    k8s: LocalKubernetesCluster, target: Path, namespace: str = NAMESPACE
) -> Path:
    """A kubeconfig for the Airflow side's service account: the tests' submits, stops and
    status calls run with the README's RBAC, not as an admin."""
    return account_kubeconfig(k8s.kubeconfig, namespace, target)


def job_pods(api: Any, ref: KubernetesJobRef) -> list[dict[str, Any]]:
    from kubernetes import client

    listed = client.CoreV1Api(api).list_namespaced_pod(
        ref.namespace, label_selector=f"batch.kubernetes.io/controller-uid={ref.uid}"
    )
    return list(api.sanitize_for_serialization(listed).get("items") or [])


def job_body(api: Any, namespace: str = NAMESPACE) -> dict[str, Any]:
    from kubernetes import client

    listed = client.BatchV1Api(api).list_namespaced_job(namespace)
    return dict(api.sanitize_for_serialization(listed))


def driver_pids() -> list[int]:
    """The pids of the driver runners in pods (their command names the shipped spec)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        program = command.split(b"\0", 1)[0].rsplit(b"/", 1)[-1]
        # The runner's Python itself, not tini in front of it (whose arguments are the same).
        if program.startswith(b"python") and RUNNER in command and b"/opt/kafkaspark/" in command:
            found.append(int(entry.name))
    return found


def add_partition(bootstrap: str, topic: str, total: int) -> None:
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_partitions([NewPartitions(topic, total)]).values():
        future.result(timeout=30)
