"""What the Kubernetes tests need of the local cluster besides the launcher: an API client
from its kubeconfig, a namespace with the driver's service account and RBAC (the documented
`docs/kubernetes/driver-rbac.yaml`), the pods of a Job, and the driver process of a pod as
this machine sees it (a pod's processes are processes of the node, here this host)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.core.cluster.job_ref import KubernetesJobRef
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster
from kafkaspark_devstack.k8s.namespace import (
    account_kubeconfig,
    admin_api,
    prepare_namespace,
)

NAMESPACE = "kafkaspark-e2e"
BUCKET = "k8s-e2e"


def kube_api(k8s: LocalKubernetesCluster) -> Any:
    return admin_api(k8s.kubeconfig)


def make_namespace(k8s: LocalKubernetesCluster, namespace: str = NAMESPACE) -> None:
    """The namespace with the documented RBAC (docs/kubernetes/) for the drivers and for the
    Airflow side (once)."""
    prepare_namespace(k8s.kubeconfig, namespace)


def airflow_kubeconfig(
    k8s: LocalKubernetesCluster, target: Path, namespace: str = NAMESPACE
) -> Path:
    """A kubeconfig for the Airflow side's service account: the tests' submits, stops and
    status calls run with the documented RBAC, not as an admin."""
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


def add_partition(bootstrap: str, topic: str, total: int) -> None:
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_partitions([NewPartitions(topic, total)]).values():
        future.result(timeout=30)


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


def example_spec(
    k8s: LocalKubernetesCluster, checkpoint: str, job_name: str, source: str, sink: str
) -> dict[str, Any]:
    """The example job for the driver image: the servers from the `kafka` connection, a
    2-second trigger, 600 offsets a batch, a 20-second lease."""
    spec = job_spec_dict(
        bootstrap_servers="from-connection:9092",
        checkpoint=checkpoint,
        job_name=job_name,
        source_topic=source,
        sink_topic=sink,
        trigger_interval="2 seconds",
        max_offsets_per_trigger=600,
    )
    spec["spark_conf"] = spark_conf(k8s)
    spec["lease_ttl_s"] = 20
    return spec


def submit_arguments(tmp_path: Path) -> dict[str, Any]:
    """What each submit of the tier passes besides its spec: the `connections` fixture's
    connections, a working folder, a restart budget of 3."""
    return {
        "kafka_conn_id": "kafka_k8s",
        "spark_conn_id": "spark_k8s",
        "kubernetes_conn_id": "kube_k8s",
        "aws_conn_id": "s3_k8s",
        "workdir": str(tmp_path / "jobs"),
        "max_restarts": 3,
    }
