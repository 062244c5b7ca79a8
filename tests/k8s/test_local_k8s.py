"""The local Kubernetes cluster is real: a pod of the driver image runs to Succeeded and
its log comes back through the API server (kubelet, containerd, CNI, logs); a PySpark job
run with spark-submit in a pod, in client mode against the API server through the
`kubernetes` service, gets an executor pod that does its work; and `stop` leaves nothing
on the host. Needs root and `make setup-k8s`; run with `make e2e-k8s` (not in
`make e2e-cluster`, which this machine may run without the Kubernetes build)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client, utils
from kubernetes.config import new_client_from_config

from airflow_provider_kafkaspark.versions import SPARK_VERSION
from kafkaspark_devstack.k8s import host
from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster

pytestmark = pytest.mark.k8s

RBAC = Path(__file__).resolve().parents[2] / "docs" / "kubernetes" / "driver-rbac.yaml"
NAMESPACE = "default"
T = TypeVar("T")

JOB = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
count = spark.range(1000).count()
total = spark.sparkContext.parallelize(range(1000), 4).map(lambda x: 2 * x).sum()
print(f"RESULT count={count} sum={total}", flush=True)
spark.stop()
"""


def wait(what: str, probe: Callable[[], T], done: Callable[[T], bool], timeout: float) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f}s (last: {value!r})")
        time.sleep(1.0)


def pod(name: str, image: str, args: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": image,
                    "imagePullPolicy": "Never",
                    # `args`, not `command`: the image's entrypoint (tini) stays in front.
                    "args": args,
                    "env": [
                        {
                            "name": "POD_IP",
                            "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
                        },
                        {
                            "name": "POD_NAME",
                            "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                        },
                    ],
                }
            ],
            **spec,
        },
    }


def finished(core: client.CoreV1Api, name: str, timeout: float) -> str:
    """The pod's final phase (Succeeded or Failed)."""
    return wait(
        f"pod {name} to finish",
        lambda: str(core.read_namespaced_pod(name, NAMESPACE).status.phase),
        lambda phase: phase in ("Succeeded", "Failed"),
        timeout,
    )


def pod_log(core: client.CoreV1Api, name: str) -> str:
    # The raw response: this client's preloaded text of a log is the repr of its bytes.
    answer = core.read_namespaced_pod_log(name, NAMESPACE, _preload_content=False)
    return str(answer.data.decode())


def spark_submit(image: str) -> str:
    token = "/var/run/secrets/kubernetes.io/serviceaccount"
    confs = {
        "spark.executor.instances": "1",
        "spark.executor.cores": "1",
        "spark.executor.memory": "512m",
        "spark.kubernetes.namespace": NAMESPACE,
        "spark.kubernetes.driver.pod.name": "$POD_NAME",
        "spark.driver.host": "$POD_IP",
        "spark.kubernetes.container.image": image,
        "spark.kubernetes.container.image.pullPolicy": "Never",
        "spark.kubernetes.authenticate.caCertFile": f"{token}/ca.crt",
        "spark.kubernetes.authenticate.oauthTokenFile": f"{token}/token",
        # Kept after the job, so that the test sees the executor pod that ran.
        "spark.kubernetes.executor.deleteOnTermination": "false",
    }
    flags = " ".join(f'--conf "{key}={value}"' for key, value in confs.items())
    return (
        f"cat > /tmp/job.py <<'EOF'\n{JOB}\nEOF\n"
        "exec spark-submit --master "
        "k8s://https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT "
        f"--deploy-mode client --name kafkaspark-k8s-smoke {flags} /tmp/job.py"
    )


def test_pods_and_a_spark_job_with_an_executor_run_and_stop_leaves_nothing(
    tmp_path: Path,
) -> None:
    figures: dict[str, float] = {}
    cluster = LocalKubernetesCluster(tmp_path / "k8s")
    started = time.monotonic()
    cluster.start()
    try:
        figures["cluster start"] = time.monotonic() - started
        api = new_client_from_config(str(cluster.kubeconfig))
        core = client.CoreV1Api(api)
        image = cluster.driver_image

        probe = "import pyspark, confluent_kafka, s3fs; print(pyspark.__version__)"
        started = time.monotonic()
        core.create_namespaced_pod(NAMESPACE, pod("imports", image, ["python", "-c", probe]))
        assert finished(core, "imports", 180) == "Succeeded", pod_log(core, "imports")
        figures["pod to Succeeded"] = time.monotonic() - started
        assert pod_log(core, "imports").strip() == SPARK_VERSION

        utils.create_from_yaml(api, str(RBAC), namespace=NAMESPACE)
        started = time.monotonic()
        driver = pod(
            "spark-driver",
            image,
            ["bash", "-c", spark_submit(image)],
            serviceAccountName="kafkaspark-driver",
        )
        core.create_namespaced_pod(NAMESPACE, driver)
        phase = finished(core, "spark-driver", 420)
        log = pod_log(core, "spark-driver")
        assert phase == "Succeeded", log[-3000:]
        figures["spark-submit with an executor"] = time.monotonic() - started
        assert "RESULT count=1000 sum=999000" in log, log[-3000:]
        executors = core.list_namespaced_pod(NAMESPACE, label_selector="spark-role=executor")
        assert len(executors.items) == 1, [p.metadata.name for p in executors.items]
        owner = executors.items[0].metadata.owner_references[0].name
        assert owner == "spark-driver"
    finally:
        cluster.stop()
        print("\n" + "\n".join(f"{k}: {v:.1f} s" for k, v in figures.items()))

    assert cluster.leftovers() == {}
    assert not host.cluster_pids(cluster.folder)
    assert not host.link_exists("kskube0")
    for binary in ("iptables", "ip6tables"):
        chains = host.cluster_chains(binary)
        assert not [c for c in chains if "/KUBE-" in c or "/CNI-" in c], chains
    assert host.mounts_under(cluster.folder) == []
    assert not host.cgroups_left("kubepods")
    # The node's image store: two copies of the driver image (about 4 GB) in a folder
    # pytest keeps for a while.
    shutil.rmtree(cluster.folder / "containerd")
