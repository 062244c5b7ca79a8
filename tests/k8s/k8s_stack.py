"""What the Kubernetes tests need of the local cluster besides the launcher: an API client
from its kubeconfig, a namespace with the driver's service account and RBAC (the README's
`docs/kubernetes/driver-rbac.yaml`), the pods of a Job, and the driver process of a pod as
this machine sees it (a pod's processes are processes of the node, here this host)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from airflow_provider_kafkaspark.core.cluster.job_ref import KubernetesJobRef
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster

NAMESPACE = "kafkaspark-e2e"
BUCKET = "k8s-e2e"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "kubernetes"
AIRFLOW_ACCOUNT = "kafkaspark-airflow"
RUNNER = b"airflow_provider_kafkaspark.spark.runner"


def kube_api(k8s: LocalKubernetesCluster) -> Any:
    from kubernetes import config

    return config.new_client_from_config(config_file=str(k8s.kubeconfig))


def make_namespace(k8s: LocalKubernetesCluster, namespace: str = NAMESPACE) -> None:
    """The namespace with the README's RBAC for the drivers and for the Airflow side (once)."""
    from kubernetes import client, utils

    api = kube_api(k8s)
    core = client.CoreV1Api(api)
    names = [n.metadata.name for n in core.list_namespace().items]
    if namespace in names:
        return
    core.create_namespace({"metadata": {"name": namespace}})
    for doc in ("driver-rbac.yaml", "airflow-rbac.yaml"):
        utils.create_from_yaml(api, str(DOCS / doc), namespace=namespace)


def airflow_kubeconfig(
    k8s: LocalKubernetesCluster, target: Path, namespace: str = NAMESPACE
) -> Path:
    """A kubeconfig for the Airflow side's service account (a token of it): the submits,
    stops and status calls of the tests run with the README's RBAC, not as an admin."""
    import yaml
    from kubernetes import client

    api = kube_api(k8s)
    token = client.CoreV1Api(api).create_namespaced_service_account_token(
        AIRFLOW_ACCOUNT, namespace, {"spec": {"expirationSeconds": 7200}}
    )
    admin = yaml.safe_load(k8s.kubeconfig.read_text())
    cluster = admin["clusters"][0]["cluster"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": cluster}],
        "users": [{"name": AIRFLOW_ACCOUNT, "user": {"token": token.status.token}}],
        "contexts": [
            {
                "name": "airflow",
                "context": {"cluster": "local", "user": AIRFLOW_ACCOUNT, "namespace": namespace},
            }
        ],
        "current-context": "airflow",
    }
    target.write_text(yaml.safe_dump(config))
    target.chmod(0o600)
    return target


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


class OutletEvents(SimpleNamespace):
    def add(self, asset: Any, extra: dict[str, Any] | None = None) -> None:
        self.added = (asset, extra)


def committed(checkpoint: str) -> int:
    try:
        return CheckpointReader(checkpoint).position().latest_committed or -1
    except Exception:  # noqa: BLE001 - not written yet
        return -1


def lease_owner(checkpoint: str) -> str | None:
    lease = ControlFolder(checkpoint).read_lease()
    return None if lease is None else lease.owner_id


def spark_conf(k8s: LocalKubernetesCluster) -> dict[str, str]:
    return {
        "spark.kubernetes.container.image": k8s.driver_image,
        "spark.kubernetes.container.image.pullPolicy": "Never",
        "spark.sql.shuffle.partitions": "2",
        "spark.executor.instances": "1",
        "spark.executor.cores": "1",
        "spark.executor.memory": "768m",
        "spark.kubernetes.executor.request.cores": "100m",
        "spark.kubernetes.driver.request.cores": "100m",
    }
