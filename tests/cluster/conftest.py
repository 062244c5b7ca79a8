"""One real YARN cluster (a ResourceManager and a NodeManager) for the cluster tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkaspark_devstack.yarn import LocalYarnCluster


@pytest.fixture(scope="session")
def yarn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalYarnCluster]:
    with LocalYarnCluster(tmp_path_factory.mktemp("yarn")) as cluster:
        yield cluster
