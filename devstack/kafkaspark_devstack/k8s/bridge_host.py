"""Another host on the cluster's bridge that runs no node: node.py's namespaces (network,
PID, UTS, mount) without containerd or a kubelet, for a client that must share neither the
submitting host's loopback, pids nor host name, such as a stop run from elsewhere. It
reaches what pods reach: the API server, Kafka and S3 at the bridge address."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from kafkaspark_devstack.k8s import node
from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster
from kafkaspark_devstack.k8s.host import HostSetupError

# Far above the indexes `add_node` hands out first, so the two never meet.
FIRST_INDEX = 150


class BridgeHost:
    """Use as a context manager: up on enter, taken back (namespaces, veth, route) on exit."""

    def __init__(
        self, cluster: LocalKubernetesCluster, name: str, folder: Path, index: int = FIRST_INDEX
    ) -> None:
        state = cluster.state
        self.plan = node.plan(name, index, state.bridge, state.pod_cidr)
        self.gateway = state.address
        self.bridge = state.bridge
        self.folder = folder
        self.init: int | None = None
        self._starter: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return self.plan.address

    def __enter__(self) -> BridgeHost:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "init.ready").unlink(missing_ok=True)
        try:
            node.bring_up(self.plan, self.bridge, self.gateway)
            self._starter = subprocess.Popen(
                node.init_command(self.plan, self.folder),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            self.init = node.find_init(self._starter, self.folder, time.monotonic() + 30)
        except BaseException:
            self.__exit__()
            raise
        return self

    def run(
        self, argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 300.0
    ) -> subprocess.CompletedProcess[str]:
        """`argv` on this host, with `env` added to this process's environment."""
        assert self.init is not None, "the host is not up"
        return subprocess.run(
            node.enter_command(self.init, list(argv), self.folder),
            env={**os.environ, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def __exit__(self, *exc: object) -> None:
        left = node.remove(self.plan, self.init, self.bridge)
        if self._starter is not None:
            self._starter.wait(timeout=10)
        if left:
            raise HostSetupError(f"host {self.plan.name}: left behind {', '.join(left)}")
