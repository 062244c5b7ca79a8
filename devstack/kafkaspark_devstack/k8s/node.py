"""A node added beside the first, as "another host" on this machine: a network namespace
joined to the cluster's bridge by a veth, with PID, UTS and mount namespaces of its own, all
held by one init process. Its containerd, kubelet and kube-proxy run inside (`enter`).

Layout of node number i (the first node, in this machine's own namespaces, is 1), for the
cluster bridge's network 10.244.0.0/24:

- namespace `<bridge>-n<i>`; veth `<bridge>n<i>` (a port of the bridge) to `eth0` inside,
  address 10.244.0.i, default route via the bridge address;
- pods on the bridge `<bridge-stem><i-1>` inside (the CNI plugin makes it) on 10.244.(i-1).0/24,
  gateway .1; this machine routes that /24 via 10.244.0.i;
- the kubelet's cgroup root `/<node name>` in every cgroup hierarchy;
- /var/log/pods, /var/log/containers and /run/containerd of its own (mounts that only its
  mount namespace sees, so they end with it).

Killing the init ends every process of the node at once (the kernel empties a PID namespace
whose init dies): a power loss. `remove` then takes back the namespace, veth, route and cgroups.
"""

from __future__ import annotations

import ipaddress
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from kafkaspark_devstack.k8s import host
from kafkaspark_devstack.k8s.host import HostSetupError
from kafkaspark_devstack.process import child_pids, proc_cmdline

# The init: host name and private mounts, a ready file, then reap orphans as a PID 1 must
# (containerd's shims are reparented to it).
INIT = r"""
import os, subprocess, sys, time
name, folder = sys.argv[1], sys.argv[2]
subprocess.run(["hostname", name], check=True)
for target, source in (("/var/log/pods", "pod-logs"), ("/var/log/containers", "container-logs")):
    os.makedirs(target, exist_ok=True)
    os.makedirs(os.path.join(folder, source), exist_ok=True)
    subprocess.run(["mount", "--bind", os.path.join(folder, source), target], check=True)
os.makedirs("/run/containerd", exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0711", "tmpfs", "/run/containerd"], check=True)
open(os.path.join(folder, "init.ready"), "w").close()
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(1)
"""
INIT_MARKER = "kafkaspark-node-init"


@dataclass(frozen=True)
class NodeHost:
    name: str
    index: int
    namespace: str
    veth: str
    address: str
    prefix: int
    pod_bridge: str
    pod_cidr: str
    pod_gateway: str
    cgroup_root: str

    @property
    def netns_path(self) -> str:
        return f"/run/netns/{self.namespace}"


def plan(name: str, index: int, bridge: str, bridge_cidr: str) -> NodeHost:
    """Node `index` (2..200) of a cluster whose bridge `bridge` has the network `bridge_cidr`."""
    network = ipaddress.ip_network(bridge_cidr)
    if not 2 <= index <= 200 or network.prefixlen > 24 or network.version != 4:
        raise HostSetupError(f"node {name}: index {index} or network {bridge_cidr} unsupported")
    pods = ipaddress.ip_network(f"{network.network_address + 256 * (index - 1)}/24")
    stem = re.sub(r"\d+$", "", bridge)
    return NodeHost(
        name=name,
        index=index,
        namespace=f"{bridge}-n{index}",
        veth=f"{bridge}n{index}",
        address=str(network.network_address + index),
        prefix=network.prefixlen,
        pod_bridge=f"{stem}{index - 1}",
        pod_cidr=str(pods),
        pod_gateway=str(pods.network_address + 1),
        cgroup_root=f"/{name}",
    )


def up_commands(node: NodeHost, bridge: str, gateway: str) -> list[list[str]]:
    ns = node.namespace
    return [
        ["ip", "netns", "add", ns],
        ["ip", "link", "add", node.veth, "type", "veth", "peer", "name", "eth0", "netns", ns],
        ["ip", "link", "set", node.veth, "master", bridge, "up"],
        ["ip", "-n", ns, "addr", "add", f"{node.address}/{node.prefix}", "dev", "eth0"],
        ["ip", "-n", ns, "link", "set", "lo", "up"],
        ["ip", "-n", ns, "link", "set", "eth0", "up"],
        ["ip", "-n", ns, "route", "add", "default", "via", gateway],
        ["ip", "route", "add", node.pod_cidr, "via", node.address, "dev", bridge],
        # Per network namespace: the node forwards between its pods' bridge and eth0.
        ["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"],
    ]


def init_command(node: NodeHost, folder: Path) -> list[str]:
    return [
        "nsenter", f"--net={node.netns_path}",
        "unshare", "--pid", "--uts", "--mount", "--fork", "--mount-proc", "--kill-child",
        "python3", "-c", INIT, node.name, str(folder), INIT_MARKER,
    ]  # fmt: skip


def enter_command(init_pid: int, argv: list[str], cwd: Path) -> list[str]:
    """`argv` on the node: in its init's mount, UTS, network and PID namespaces."""
    return ["nsenter", "-t", str(init_pid), "-m", "-u", "-n", "-p", f"--wd={cwd}", "--", *argv]


def bring_up(node: NodeHost, bridge: str, gateway: str) -> None:
    if host.link_exists(node.veth) or Path(node.netns_path).exists():
        raise HostSetupError(
            f"node {node.name}: {node.veth} or namespace {node.namespace} exists already "
            "(`kafkaspark local k8s stop`)"
        )
    for command in up_commands(node, bridge, gateway):
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
        if done.returncode != 0:
            raise HostSetupError(
                f"node {node.name}: {' '.join(command)}: {done.stderr.strip() or done.returncode}"
            )
    make_cgroup_root(node.cgroup_root)


def make_cgroup_root(name: str) -> None:
    """The kubelet's `cgroupRoot` must exist in every hierarchy; cgroup v1's cpuset starts a
    new group with no CPUs and no memory nodes, so it takes its parent's."""
    for hierarchy in host.cgroup_hierarchies():
        folder = hierarchy / name.strip("/")
        folder.mkdir(exist_ok=True)
        for key in ("cpuset.cpus", "cpuset.mems"):
            own, parent = folder / key, hierarchy / key
            if own.exists() and not own.read_text().strip():
                own.write_text(parent.read_text())


def find_init(starter: subprocess.Popen[bytes], folder: Path, deadline: float) -> int:
    """The init's pid as this machine sees it: the child of `unshare`, once its mounts are
    in place (its ready file)."""
    ready = folder / "init.ready"
    while time.monotonic() < deadline:
        if starter.poll() is not None:
            raise HostSetupError(f"the node init in {folder} exited ({starter.returncode})")
        if ready.exists():
            for child in child_pids(starter.pid):
                if INIT_MARKER.encode() in proc_cmdline(child):
                    return child
        time.sleep(0.1)
    raise HostSetupError(f"the node init in {folder} was not ready in time")


def kill(init_pid: int | None) -> None:
    """A power loss: SIGKILL to the init ends every process of the node's PID namespace."""
    if init_pid and INIT_MARKER.encode() in proc_cmdline(init_pid):
        os.kill(init_pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while proc_cmdline(init_pid) and time.monotonic() < deadline:
            time.sleep(0.05)


def remove(node: NodeHost, init_pid: int | None, bridge: str) -> list[str]:
    """Everything the node changed on this machine, after its processes; returns what stayed."""
    kill(init_pid)
    subprocess.run(
        ["ip", "route", "del", node.pod_cidr, "via", node.address, "dev", bridge],
        capture_output=True,
        timeout=30,
        check=False,
    )
    # Deleting one end deletes the pair; the namespace's own links go with the namespace.
    subprocess.run(["ip", "link", "del", node.veth], capture_output=True, timeout=30, check=False)
    subprocess.run(
        ["ip", "netns", "del", node.namespace], capture_output=True, timeout=30, check=False
    )
    # The kernel ends a dead init's namespace members a moment after it: wait for the cgroups
    # to empty before removing them.
    deadline = time.monotonic() + 10
    while host.cgroup_pids(node.cgroup_root) and time.monotonic() < deadline:
        time.sleep(0.1)
    stayed = host.remove_cgroups(node.cgroup_root)
    return [*stayed, *leftovers(node)]


def leftovers(node: NodeHost) -> list[str]:
    found = []
    if host.link_exists(node.veth):
        found.append(f"veth {node.veth}")
    if Path(node.netns_path).exists():
        found.append(f"namespace {node.namespace}")
    routes = subprocess.run(
        ["ip", "route", "show", node.pod_cidr], capture_output=True, text=True, check=False
    ).stdout.strip()
    if routes:
        found.append(f"route {routes}")
    found += host.cgroups_left(node.cgroup_root)
    return found
