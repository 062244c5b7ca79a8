"""One real YARN cluster (a ResourceManager and a NodeManager) for the cluster tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkaspark_devstack.yarn import LocalYarnCluster


@pytest.fixture(scope="session")
def yarn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalYarnCluster]:
    cluster = LocalYarnCluster(tmp_path_factory.mktemp("yarn")).start()
    try:
        yield cluster
    finally:
        # The tests are over: a NodeManager still ending its containers after 10 s is
        # killed (the launcher's own 30 s grace cost the tier most of a minute).
        cluster.stop(timeout=10)
