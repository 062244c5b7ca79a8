"""One real Kubernetes cluster (`kafkaspark_devstack.k8s`: a control plane and one node on a
bridge of its own) for the Kubernetes tier (`make e2e-k8s`), and what the example job's tests
share: Kafka and an S3 store serving on the cluster's bridge (where pods reach them) and the
Airflow connections to all of them; a second node for the tests that place pods."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkaspark_devstack.k8s import node
from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster
from kafkaspark_devstack.k8s.host import cluster_pids
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import LocalS3Server
from tests.k8s.k8s_stack import BUCKET, NAMESPACE, airflow_kubeconfig, make_namespace

SECOND = "kafkaspark-node-2"


@pytest.fixture(scope="session")
def k8s(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKubernetesCluster]:
    with LocalKubernetesCluster(tmp_path_factory.mktemp("k8s")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def bridge_kafka(
    k8s: LocalKubernetesCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalKafkaCluster]:
    folder = tmp_path_factory.mktemp("k8s-kafka")
    with LocalKafkaCluster(folder, host=k8s.address) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def bridge_s3(
    k8s: LocalKubernetesCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalS3Server]:
    server = LocalS3Server(tmp_path_factory.mktemp("k8s-s3"), host=k8s.address)
    with server:
        server.create_bucket(BUCKET)
        yield server


@pytest.fixture
def connections(
    monkeypatch: pytest.MonkeyPatch,
    k8s: LocalKubernetesCluster,
    bridge_kafka: LocalKafkaCluster,
    bridge_s3: LocalS3Server,
    tmp_path: Path,
) -> None:
    """The four official connection types; no AWS variables and no kubeconfig on the worker."""
    for key in list(os.environ):
        if key.startswith("AWS_") or key == "KUBECONFIG":
            monkeypatch.delenv(key)
    make_namespace(k8s)
    kubeconfig = airflow_kubeconfig(k8s, tmp_path / "airflow.kubeconfig")
    conns: dict[str, dict[str, Any]] = {
        "spark_k8s": {
            "conn_type": "spark",
            "host": f"k8s://{k8s.server}",
            "extra": {"deploy-mode": "cluster", "namespace": NAMESPACE},
        },
        "kube_k8s": {
            "conn_type": "kubernetes",
            "extra": {"kube_config_path": str(kubeconfig)},
        },
        "kafka_k8s": {
            "conn_type": "kafka",
            "extra": {"bootstrap.servers": bridge_kafka.bootstrap_servers},
        },
        "s3_k8s": bridge_s3.aws_connection(),
    }
    for name, value in conns.items():
        monkeypatch.setenv(f"AIRFLOW_CONN_{name.upper()}", json.dumps(value))
    # backend_for(ref) (stop, health) uses the cncf provider's default connection.
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(conns["kube_k8s"]))


@pytest.fixture(scope="session")
def second_node(k8s: LocalKubernetesCluster) -> Iterator[str]:
    """A second node ("another host"), added once: the pod placement test runs a driver on
    it, then the node loss test loses it; afterwards nothing of it is left."""
    started = time.monotonic()
    k8s.add_node(SECOND)
    print(f"second node up in {time.monotonic() - started:.0f}s", flush=True)
    try:
        yield SECOND
    finally:
        plan = k8s.node_host(SECOND) if SECOND in k8s.state.added else None
        if plan is not None:
            k8s.remove_node(SECOND)
        k8s.delete_node(SECOND)
        uncordon = k8s.kubectl("uncordon", k8s.state.node)
        assert uncordon.returncode == 0, uncordon.stderr
        if plan is not None:
            assert node.leftovers(plan) == []
        assert cluster_pids(k8s.folder / "nodes" / SECOND) == []
