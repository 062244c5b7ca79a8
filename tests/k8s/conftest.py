"""One real Kubernetes cluster (`kafkaspark_devstack.k8s`: a control plane and one node on a
bridge of its own) for the Kubernetes tier (`make e2e-k8s`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster


@pytest.fixture(scope="session")
def k8s(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKubernetesCluster]:
    with LocalKubernetesCluster(tmp_path_factory.mktemp("k8s")) as cluster:
        yield cluster
