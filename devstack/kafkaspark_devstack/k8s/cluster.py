"""A local Kubernetes cluster: etcd, the API server, the controller manager and the
scheduler, then one node (containerd and a kubelet) and kube-proxy, all as root processes
of this host bound to the address of a bridge the launcher creates, never to 0.0.0.0.

Pods get addresses of the bridge's network (the standard `bridge` CNI plugin); they reach
the API server through the `kubernetes` service (kube-proxy, iptables mode) and the host's
own servers (Kafka, the S3 store started with `KAFKASPARK_LOCAL_HOST=<bridge address>`) at
the bridge address. Images come from the cache's OCI archives (image.py), imported into
the node's containerd, so pods say `imagePullPolicy: Never`.

The layout and the pids are kept in `<folder>/k8s.json` for `stop`/`status` from another
process. `stop` takes back everything the cluster changed on the host (host.py).
"""

from __future__ import annotations

import logging
import os
import shutil
import ssl
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.errors import LocalStackError
from kafkaspark_devstack.daemon import load_state, log_tail, reap, save_state, spawn, stop_group
from kafkaspark_devstack.k8s import api, config, host, node, pki
from kafkaspark_devstack.k8s.build import Binaries, binaries, default_cache_dir
from kafkaspark_devstack.k8s.image import Image, driver_image, pause_image
from kafkaspark_devstack.k8s.oci import full_name
from kafkaspark_devstack.process import server_running

log = logging.getLogger(__name__)

STATE_FILE = "k8s.json"
ADMIN_KUBECONFIG = "admin.kubeconfig"
DEFAULT_NODE = "kafkaspark-node-1"
DEFAULT_BRIDGE = "kskube0"
DEFAULT_ADDRESS = "10.244.0.1"
DEFAULT_POD_CIDR = "10.244.0.0/24"
DEFAULT_SERVICE_CIDR = "10.96.0.0/24"
# Start order; stop goes the other way.
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
NODE = ("containerd", "kubelet", "kube-proxy")
DAEMONS = (*CONTROL_PLANE, *NODE)
IMPORT_TIMEOUT = 600.0
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class KubernetesStartError(LocalStackError):
    """A part of the local Kubernetes cluster exited or did not come up in time."""


class KubernetesNodeError(LocalStackError):
    """A node of the local cluster could not be found, killed or deleted."""


@dataclass
class _State:
    folder: str
    node: str
    address: str
    bridge: str
    pod_cidr: str
    service_cidr: str
    driver_image: str = ""
    pause_image: str = ""
    pids: dict[str, int] = field(default_factory=dict)
    # The host's values before the kubelet and the CNI plugin changed them.
    sysctls: dict[str, str] = field(default_factory=dict)
    # Nodes added beside the first (node.py), by name: {"index", "init", "starter"}; their
    # daemons' pids are in `pids` as "<node>/<daemon>".
    added: dict[str, dict[str, int]] = field(default_factory=dict)


class LocalKubernetesCluster:
    def __init__(
        self,
        folder: str | os.PathLike[str] = Path(".local") / "k8s",
        *,
        node: str = DEFAULT_NODE,
        bridge: str = DEFAULT_BRIDGE,
        address: str = DEFAULT_ADDRESS,
        pod_cidr: str = DEFAULT_POD_CIDR,
        service_cidr: str = DEFAULT_SERVICE_CIDR,
        cache: Path | None = None,
    ) -> None:
        self.folder = Path(folder).absolute()
        self.cache = cache or default_cache_dir()
        self._children: dict[str, subprocess.Popen[bytes]] = {}
        found = load_state(self.folder / STATE_FILE, _State)
        # A cluster that ran from this folder keeps its layout; a new one takes the arguments.
        self.state = found or _State(
            folder=str(self.folder),
            node=node,
            address=address,
            bridge=bridge,
            pod_cidr=pod_cidr,
            service_cidr=service_cidr,
        )
        self.plane = config.ControlPlaneLayout(
            address=self.state.address, service_cidr=self.state.service_cidr, folder=self.folder
        )
        self.node = config.NodeLayout(
            name=self.state.node,
            address=self.state.address,
            bridge=self.state.bridge,
            pod_cidr=self.state.pod_cidr,
            folder=self.folder,
        )

    # -- what callers use ---------------------------------------------------------------

    @property
    def kubeconfig(self) -> Path:
        return self.folder / ADMIN_KUBECONFIG

    @property
    def server(self) -> str:
        return self.plane.server

    @property
    def address(self) -> str:
        """The bridge address: the API server's, and where pods reach this host's servers."""
        return self.state.address

    @property
    def driver_image(self) -> str:
        return self.state.driver_image

    @property
    def nodes(self) -> list[str]:
        return [self.state.node, *self.state.added]

    def log_file(self, name: str) -> Path:
        return self.folder / "logs" / f"{name.replace('/', '-')}.log"

    def kubectl(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self._binaries().path("kubectl")), f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(self, timeout: float = 240.0) -> LocalKubernetesCluster:
        """Start every part, wait until the node is Ready and the `default` service account
        exists; on any failure stop what started and raise naming the part and its log."""
        if self.is_running():
            raise KubernetesStartError(
                f"a cluster runs from {self.folder} already (`kafkaspark local k8s stop`)"
            )
        if self.state.pids or self.state.added or host.link_exists(self.state.bridge):
            log.warning("cleaning up what an earlier cluster in %s left", self.folder)
            self.stop()
        bins = self._binaries()
        pause = pause_image(self.cache)
        # Built here when missing (minutes, with progress lines); `build` makes them ahead.
        driver = driver_image(self.cache)
        started = time.monotonic()
        deadline = started + timeout
        (self.folder / "logs").mkdir(parents=True, exist_ok=True)
        self.state.sysctls = host.read_sysctls()
        self.state.driver_image = driver.name
        self.state.pause_image = pause.name
        self._save()
        try:
            self._start(bins, pause, driver, deadline)
        except BaseException:
            self.stop()
            raise
        print(f"k8s: cluster up in {time.monotonic() - started:.0f}s", flush=True)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop every part and take back what it changed on the host; nothing stays behind
        (processes, mounts, the bridge, iptables chains, cgroups, sysctl values)."""
        for name in list(self.state.added):
            self.remove_node(name)
        for name in reversed(DAEMONS):
            if name == "containerd":
                self._stop_pods()
            self._stop_daemon(name, timeout)
        # What a crash or a SIGKILL left: containerd's shims and anything else started
        # with a path of this folder on its command line.
        host.kill_all(host.cluster_pids(self.folder))
        host.remove_chains(config.CNI_NETWORK)
        host.delete_bridge(self.state.bridge)
        stuck = host.unmount_all(self.folder)
        if stuck:
            log.warning("still mounted under %s: %s", self.folder, stuck)
        host.remove_cgroups("kubepods")
        host.remove_empty_shim_folders()
        if self.state.sysctls:
            changed = host.restore_sysctls(self.state.sysctls)
            if changed:
                log.info("restored %s", ", ".join(changed))
        # Ephemeral by nature (containerd's /run and the IP allocations of pods now gone).
        for folder in (self.folder / "containerd" / "state", self.folder / "cni" / "ipam"):
            shutil.rmtree(folder, ignore_errors=True)
        self.state.pids = {}
        self.state.sysctls = {}
        if self.folder.is_dir():
            self._save()

    def is_running(self) -> bool:
        return bool(self.state.pids) and all(self._running(n) for n in DAEMONS)

    def status(self) -> dict[str, Any]:
        daemons = {
            name: {
                "pid": self.state.pids.get(name),
                "running": self._running(name),
                "log": str(self.log_file(name)),
            }
            for name in DAEMONS
        }
        ready = {}
        if daemons["kube-apiserver"]["running"]:
            context = self._admin_context()
            for name in self.nodes:
                found = api.get_json(f"{self.server}/api/v1/nodes/{name}", context, 3.0)
                ready[name] = api.node_ready(found)
        return {
            "running": all(d["running"] for d in daemons.values()),
            "folder": str(self.folder),
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "bridge": self.state.bridge,
            "address": self.state.address,
            "node": self.state.node,
            "node_ready": ready.get(self.state.node, False),
            "nodes_ready": ready,
            "driver_image": self.state.driver_image,
            "daemons": daemons,
            "on_host": self.leftovers(),
        }

    def leftovers(self) -> dict[str, list[str]]:
        """What of a cluster is on this host beyond its daemons: empty after `stop`."""
        found = {
            "processes": [
                str(p)
                for p in host.cluster_pids(self.folder)
                if p not in self.state.pids.values() and not self._on_added_node(p)
            ],
            "mounts": host.mounts_under(self.folder),
            "bridge": [self.state.bridge] if host.link_exists(self.state.bridge) else [],
            "iptables_chains": host.cluster_chains() + host.cluster_chains("ip6tables"),
            "cgroups": host.cgroups_left("kubepods"),
            "nodes": [item for n in self.state.added for item in self._added_leftovers(n)],
        }
        return {key: value for key, value in found.items() if value}

    def __enter__(self) -> LocalKubernetesCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- more nodes -----------------------------------------------------------------------

    def add_node(self, name: str, timeout: float = 300.0) -> config.NodeLayout:
        """A node on "another host" of this machine (node.py): its own namespaces, containerd
        (the images imported into it), kubelet and kube-proxy; returns when it is Ready and
        its kube-proxy answers. On a failure what it started is taken back."""
        if not self.is_running():
            raise KubernetesStartError(f"no cluster runs from {self.folder}: start it first")
        if name in self.nodes:
            raise KubernetesStartError(f"node {name} exists already in {self.folder}")
        used = {entry["index"] for entry in self.state.added.values()}
        index = min(set(range(2, 201)) - used)
        self.state.added[name] = {"index": index}
        self._save()
        started = time.monotonic()
        try:
            layout = self._start_added(name, started + timeout)
        except BaseException:
            self.remove_node(name)
            raise
        print(f"k8s: node {name} up in {time.monotonic() - started:.0f}s", flush=True)
        return layout

    def node_host(self, name: str) -> node.NodeHost:
        entry = self.state.added.get(name)
        if entry is None:
            raise KubernetesNodeError(
                f"{name} is no added node of {self.folder} (added: {list(self.state.added)}); "
                "the first node shares this machine's namespaces with the control plane"
            )
        return node.plan(name, entry["index"], self.state.bridge, self.state.pod_cidr)

    def kill_node(self, name: str) -> None:
        """A power loss of node `name`: SIGKILL to every process of it at once (containerd,
        its shims and pods, the kubelet, kube-proxy). Its Node object stays in the API, its
        network and cgroups on this machine until `remove_node` or `stop`."""
        plan = self.node_host(name)
        node.kill(self.state.added[name].get("init"))
        # Its processes are gone: what is left is to reap this process's children.
        for key in [k for k in self.state.pids if k.startswith(f"{name}/")]:
            reap(self._children.pop(key, None), 5.0)
            self.state.pids.pop(key, None)
        reap(self._children.pop(f"{name}/init", None), 5.0)
        self.state.added[name]["init"] = 0
        self._save()
        log.info("node %s (%s) killed", name, plan.address)

    def delete_node(self, name: str) -> None:
        """What a cloud's node controller does for a VM that is gone: delete the Node object
        (the pod garbage collector then fails and removes the pods bound to it, 40-60 s on).
        Without it a lost node's pods stay Running with a deletion time forever (no kubelet
        ends them), and a Job waits for them; the `node.kubernetes.io/out-of-service` taint
        on the Node fails them within seconds instead (both seen on this cluster)."""
        status = api.delete(f"{self.server}/api/v1/nodes/{name}", self._admin_context(), 10.0)
        if status not in (200, 202, 404):
            raise KubernetesNodeError(f"deleting node {name}: the API server answered {status}")

    def remove_node(self, name: str) -> None:
        """An added node's processes and all it changed on this machine (namespaces, veth,
        route, cgroups); the Node object stays for `delete_node`."""
        plan = self.node_host(name)
        self.kill_node(name)
        reap(self._children.pop(f"{name}/starter", None), 5.0)
        left = node.remove(plan, None, self.state.bridge)
        if left:
            log.warning("node %s left on this host: %s", name, left)
        folder = self._added_folder(name)
        for ephemeral in (folder / "containerd" / "state", folder / "cni" / "ipam"):
            shutil.rmtree(ephemeral, ignore_errors=True)
        (folder / "init.ready").unlink(missing_ok=True)
        del self.state.added[name]
        if self.folder.is_dir():
            self._save()

    def _added_folder(self, name: str) -> Path:
        return self.folder / "nodes" / name

    def _added_layout(self, name: str) -> config.NodeLayout:
        plan = self.node_host(name)
        return config.NodeLayout(
            name=name,
            address=plan.address,
            bridge=plan.pod_bridge,
            pod_cidr=plan.pod_cidr,
            folder=self._added_folder(name),
            cluster_folder=self.folder,
            cgroup_root=plan.cgroup_root,
            pod_gateway=plan.pod_gateway,
        )

    def _start_added(self, name: str, deadline: float) -> config.NodeLayout:
        plan, layout = self.node_host(name), self._added_layout(name)
        folder = layout.folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "init.ready").unlink(missing_ok=True)
        bins, pause, driver = self._binaries(), pause_image(self.cache), driver_image(self.cache)
        self._write_node_credentials(name, plan.address)
        self._write_node_configs(layout, pause)
        node.bring_up(plan, self.state.bridge, self.state.address)
        with open(self.log_file(f"{name}/init"), "ab") as errors:
            starter = subprocess.Popen(
                node.init_command(plan, folder),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                start_new_session=True,
            )
        self._children[f"{name}/starter"] = starter
        init = node.find_init(starter, folder, deadline)
        self.state.added[name].update(init=init, starter=starter.pid)
        self._save()

        def on_node(argv: list[str]) -> list[str]:
            return node.enter_command(init, argv, folder)

        socket = layout.containerd_socket
        self._spawn(
            f"{name}/containerd",
            on_node(["containerd", f"--config={folder / 'containerd.toml'}"]),
            cwd=folder,
        )
        self._wait(
            f"{name}/containerd",
            deadline,
            lambda: self._ctr("version", socket=socket).returncode == 0,
        )
        self._import_images([pause, driver], deadline, socket)
        self._spawn(
            f"{name}/kubelet", on_node(config.kubelet_command(bins.path("kubelet"), layout)), folder
        )
        admin = self._admin_context()
        since = time.time()
        node_url = f"{self.server}/api/v1/nodes/{name}"
        self._wait(
            f"{name}/kubelet",
            deadline,
            lambda: api.node_ready(api.get_json(node_url, admin), since),
        )
        self._spawn(
            f"{name}/kube-proxy",
            on_node(config.kube_proxy_command(bins.path("kube-proxy"), layout)),
            folder,
        )
        healthz = f"http://{plan.address}:{config.PROXY_HEALTHZ_PORT}/healthz"
        self._wait(f"{name}/kube-proxy", deadline, lambda: api.get(healthz, None)[0] == 200)
        return layout

    def _write_node_credentials(self, name: str, address: str) -> None:
        ca = self._pki("ca")
        pki.issue(
            ca,
            self._pki(f"kubelet-{name}-serving"),
            f"system:node:{name}",
            "system:nodes",
            server_names=(name,),
            server_ips=(address,),
        )
        pair = pki.issue(ca, self._pki(f"kubelet-{name}"), f"system:node:{name}", "system:nodes")
        pki.kubeconfig(
            self.folder / f"kubelet-{name}.kubeconfig", self.server, ca, pair, f"system:node:{name}"
        )

    def _write_node_configs(self, layout: config.NodeLayout, pause: Image) -> None:
        folder = layout.folder
        (folder / "containerd.toml").write_text(config.containerd_config(layout, pause.name))
        net_d = folder / "cni" / "net.d"
        net_d.mkdir(parents=True, exist_ok=True)
        (net_d / "10-kskube.conflist").write_text(config.cni_config(layout))
        (folder / "kubelet-config.json").write_text(
            config.kubelet_config(layout, self._pki("ca").cert)
        )
        (folder / "kube-proxy-config.json").write_text(
            config.kube_proxy_config(layout, self.folder / "kube-proxy.kubeconfig", layout.pod_cidr)
        )

    def _added_leftovers(self, name: str) -> list[str]:
        return node.leftovers(self.node_host(name))

    def _on_added_node(self, pid: int) -> bool:
        """Whether `pid` runs on an added node (in the PID namespace of its init)."""
        spaces = set()
        for entry in self.state.added.values():
            try:
                spaces.add(os.readlink(f"/proc/{entry.get('init', 0)}/ns/pid"))
            except OSError:
                pass
        try:
            return os.readlink(f"/proc/{pid}/ns/pid") in spaces
        except OSError:
            return False

    # -- start ----------------------------------------------------------------------------

    def _start(self, bins: Binaries, pause: Image, driver: Image, deadline: float) -> None:
        prefix = int(self.state.pod_cidr.split("/")[1])
        host.create_bridge(self.state.bridge, self.state.address, prefix)
        self._write_credentials()
        self._write_configs(pause)
        self._spawn("etcd", config.etcd_command(bins.path("etcd"), self.plane, self.state.node))
        etcd = api.client_context(str(self._pki("ca").cert), self._pki("apiserver-etcd"))
        self._wait(
            "etcd", deadline, lambda: api.get(f"{self.plane.etcd_url}/health", etcd)[0] == 200
        )
        self._spawn(
            "kube-apiserver", config.apiserver_command(bins.path("kube-apiserver"), self.plane)
        )
        admin = self._admin_context()
        self._wait(
            "kube-apiserver", deadline, lambda: api.get(f"{self.server}/readyz", admin)[0] == 200
        )
        self._spawn(
            "kube-controller-manager",
            config.controller_manager_command(bins.path("kube-controller-manager"), self.plane),
        )
        self._spawn(
            "kube-scheduler", config.scheduler_command(bins.path("kube-scheduler"), self.plane)
        )
        insecure = api.client_context(None, None)
        for name, port in (
            ("kube-controller-manager", config.CONTROLLER_MANAGER_PORT),
            ("kube-scheduler", config.SCHEDULER_PORT),
        ):
            self._wait(
                name, deadline, _answers(f"https://{self.state.address}:{port}/healthz", insecure)
            )
        self._spawn("containerd", ["containerd", f"--config={self.folder / 'containerd.toml'}"])
        self._wait("containerd", deadline, lambda: self._ctr("version").returncode == 0)
        self._import_images([pause, driver], deadline)
        self._spawn("kubelet", config.kubelet_command(bins.path("kubelet"), self.node))
        node_url = f"{self.server}/api/v1/nodes/{self.state.node}"
        since = time.time()
        self._wait(
            "kubelet", deadline, lambda: api.node_ready(api.get_json(node_url, admin), since)
        )
        self._spawn("kube-proxy", config.kube_proxy_command(bins.path("kube-proxy"), self.node))
        healthz = f"http://{self.state.address}:{config.PROXY_HEALTHZ_PORT}/healthz"
        self._wait("kube-proxy", deadline, lambda: api.get(healthz, None)[0] == 200)
        account = f"{self.server}/api/v1/namespaces/default/serviceaccounts/default"
        self._wait(
            "kube-controller-manager",
            deadline,
            lambda: api.get(account, admin)[0] == 200,
            what="the default service account",
        )

    def _pki(self, name: str) -> pki.KeyPair:
        folder = self.folder / "pki"
        return pki.KeyPair(folder / f"{name}.crt", folder / f"{name}.key")

    def _write_credentials(self) -> None:
        folder = self.folder / "pki"
        ca = pki.make_ca(folder)
        pki.service_account_key(folder)
        address = self.state.address
        pki.issue(ca, self._pki("etcd"), "etcd", server_ips=(address, "127.0.0.1"))
        pki.issue(ca, self._pki("apiserver-etcd"), "kube-apiserver-etcd-client")
        pki.issue(
            ca,
            self._pki("apiserver"),
            "kube-apiserver",
            server_names=(
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
                "localhost",
            ),
            server_ips=(address, self.plane.service_ip, "127.0.0.1"),
        )
        pki.issue(
            ca, self._pki("apiserver-kubelet"), "kube-apiserver-kubelet-client", "system:masters"
        )
        # The first node's kubelet: as an added node's.
        self._write_node_credentials(self.state.node, address)
        # User and group names the API server's Node and RBAC authorizers know.
        users = {
            "admin": ("kafkaspark-admin", "system:masters"),
            "controller-manager": ("system:kube-controller-manager", None),
            "scheduler": ("system:kube-scheduler", None),
            "kube-proxy": ("system:kube-proxy", "system:node-proxier"),
        }
        for name, (user, group) in users.items():
            pair = pki.issue(ca, self._pki(name), user, group)
            target = self.kubeconfig if name == "admin" else self.folder / f"{name}.kubeconfig"
            pki.kubeconfig(target, self.server, ca, pair, user)

    def _write_configs(self, pause: Image) -> None:
        node = self.node
        (self.folder / "containerd.toml").write_text(config.containerd_config(node, pause.name))
        net_d = self.folder / "cni" / "net.d"
        net_d.mkdir(parents=True, exist_ok=True)
        (net_d / "10-kskube.conflist").write_text(config.cni_config(node))
        (self.folder / "kubelet-config.json").write_text(
            config.kubelet_config(node, self._pki("ca").cert)
        )
        (self.folder / "kube-proxy-config.json").write_text(
            config.kube_proxy_config(
                node, self.folder / "kube-proxy.kubeconfig", self.state.pod_cidr
            )
        )

    def _import_images(
        self, images: list[Image], deadline: float, socket: Path | None = None
    ) -> None:
        listed = self._ctr("images", "ls", "-q", socket=socket).stdout.split()
        for image in images:
            full = full_name(image.name)
            if full in listed:
                continue
            print(f"k8s: importing {image.name} into containerd", flush=True)
            remaining = max(10.0, min(IMPORT_TIMEOUT, deadline - time.monotonic()))
            done = self._ctr(
                "images", "import", str(image.archive), timeout=remaining, socket=socket
            )
            listed = self._ctr("images", "ls", "-q", socket=socket).stdout.split()
            if done.returncode != 0 or full not in listed:
                raise KubernetesStartError(
                    f"containerd did not import {image.archive}: {done.stderr.strip()[-300:]}"
                )

    def _ctr(
        self, *args: str, timeout: float = 30.0, socket: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        socket = socket or self.node.containerd_socket
        try:
            return subprocess.run(
                ["ctr", f"--address={socket}", "-n", "k8s.io", *args],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(args, 124, "", f"ctr timed out after {timeout}s")

    def _spawn(self, name: str, command: list[str], cwd: Path | None = None) -> None:
        env = {"PATH": PATH, "HOME": str(cwd or self.folder), "LANG": "C.UTF-8"}
        child = spawn(command, self.log_file(name), cwd=cwd or self.folder, env=env)
        self._children[name] = child
        self.state.pids[name] = child.pid
        self._save()

    def _wait(
        self,
        name: str,
        deadline: float,
        ready: Callable[[], bool],
        what: str | None = None,
    ) -> None:
        """Until `ready()`; raise naming `name`'s log when it exits or the deadline passes."""
        what = what or name
        while True:
            if not self._running(name):
                raise KubernetesStartError(
                    f"{name} exited while waiting for {what}; see {self.log_file(name)}: "
                    f"{_last_line(self.log_file(name))}"
                )
            if ready():
                return
            if time.monotonic() > deadline:
                raise KubernetesStartError(
                    f"{what} did not come up in time; see {self.log_file(name)}: "
                    f"{_last_line(self.log_file(name))}"
                )
            time.sleep(0.5)

    # -- stop -----------------------------------------------------------------------------

    def _stop_pods(self) -> None:
        """The pods' processes, then containerd's records of them, while it still runs:
        the next start begins without stale sandboxes. Their network goes with the bridge."""
        host.kill_all(host.cgroup_pids("kubepods"))
        if not self._running("containerd"):
            return
        for kind in ("tasks", "containers"):
            ids = self._ctr(kind, "ls", "-q").stdout.split()
            for item in ids:
                if kind == "tasks":
                    self._ctr("tasks", "rm", "-f", item)
                else:
                    self._ctr("containers", "rm", item)

    def _stop_daemon(self, name: str, timeout: float) -> None:
        pid = self.state.pids.get(name)
        if pid is None:
            return
        if self._running(name):
            stop_group(
                pid,
                lambda: self._running(name),
                self._children.get(name),
                what=name,
                timeout=timeout,
            )
        reap(self._children.pop(name, None), 1.0)
        self.state.pids.pop(name, None)
        if self.folder.is_dir():
            self._save()

    # -- helpers --------------------------------------------------------------------------

    def _running(self, name: str) -> bool:
        pid = self.state.pids.get(name)
        if pid is None:
            return False
        marker = str(self.folder).encode()
        return server_running(pid, marker, self._children.get(name))

    def _admin_context(self) -> ssl.SSLContext:
        return api.client_context(str(self._pki("ca").cert), self._pki("admin"))

    def _binaries(self) -> Binaries:
        return binaries(self.cache)

    def _save(self) -> None:
        save_state(self.folder / STATE_FILE, self.state)


def _answers(url: str, context: ssl.SSLContext | None) -> Callable[[], bool]:
    return lambda: api.get(url, context)[0] == 200


def _last_line(path: Path) -> str:
    return log_tail(path, 1) or "(empty log)"
