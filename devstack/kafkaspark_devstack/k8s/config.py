"""The configuration files and command lines of the cluster's daemons, as plain functions
of the layout (no I/O): what binds where, which credentials each uses, and the settings
this machine kind needs (cgroup v1 without systemd, no CAP_SYS_RESOURCE)."""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path

# Everything binds to the bridge's address; these are its ports there.
APISERVER_PORT = 6443
ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380
CONTROLLER_MANAGER_PORT = 10257
SCHEDULER_PORT = 10259
KUBELET_PORT = 10250
KUBELET_HEALTHZ_PORT = 10248
PROXY_HEALTHZ_PORT = 10256
PROXY_METRICS_PORT = 10249
CNI_NETWORK = "kskube"
CNI_BIN_DIR = "/usr/lib/cni"
# Node failures show within seconds, not the default 50: the kubelet renews its lease every
# quarter of its duration, and the controller manager waits one grace period.
NODE_LEASE_SECONDS = 16
NODE_MONITOR_GRACE = "16s"


@dataclass(frozen=True)
class NodeLayout:
    """One kubelet with its containerd. `address` is where it binds and what it reports as
    its InternalIP; `bridge`/`pod_cidr` its pods' network; a second node on another host of
    the multi-host bed gets other values of all of them."""

    name: str
    address: str
    bridge: str
    pod_cidr: str
    folder: Path
    # The cluster's folder (credentials, kubeconfigs) when the node's files live apart.
    cluster_folder: Path | None = None
    # A node added beside the first takes a cgroup tree of its own: two kubelets in one
    # `/kubepods` would each take the other's pods for orphans.
    cgroup_root: str = "/"
    # The pods' gateway: the node's address unless its pods have a bridge of their own.
    pod_gateway: str | None = None

    @property
    def containerd_socket(self) -> Path:
        return self.folder / "containerd" / "containerd.sock"

    @property
    def shared(self) -> Path:
        return self.cluster_folder or self.folder

    @property
    def gateway(self) -> str:
        return self.pod_gateway or self.address


@dataclass(frozen=True)
class ControlPlaneLayout:
    address: str
    service_cidr: str
    folder: Path

    @property
    def server(self) -> str:
        return f"https://{self.address}:{APISERVER_PORT}"

    @property
    def service_ip(self) -> str:
        """The `kubernetes` service's address: the first of the range."""
        return str(next(ipaddress.ip_network(self.service_cidr).hosts()))

    @property
    def etcd_url(self) -> str:
        return f"https://{self.address}:{ETCD_CLIENT_PORT}"


def etcd_command(binary: Path, plane: ControlPlaneLayout, name: str) -> list[str]:
    pki = plane.folder / "pki"
    peer = f"https://{plane.address}:{ETCD_PEER_PORT}"
    return [
        str(binary),
        f"--name={name}",
        f"--data-dir={plane.folder / 'etcd'}",
        f"--listen-client-urls={plane.etcd_url}",
        f"--advertise-client-urls={plane.etcd_url}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster={name}={peer}",
        "--initial-cluster-state=new",
        # Pods reach the bridge address too: only holders of the CA's certificates get in.
        f"--cert-file={pki / 'etcd.crt'}",
        f"--key-file={pki / 'etcd.key'}",
        f"--trusted-ca-file={pki / 'ca.crt'}",
        "--client-cert-auth",
        f"--peer-cert-file={pki / 'etcd.crt'}",
        f"--peer-key-file={pki / 'etcd.key'}",
        f"--peer-trusted-ca-file={pki / 'ca.crt'}",
        "--peer-client-cert-auth",
        "--log-level=warn",
    ]


def apiserver_command(binary: Path, plane: ControlPlaneLayout) -> list[str]:
    pki = plane.folder / "pki"
    return [
        str(binary),
        f"--advertise-address={plane.address}",
        f"--bind-address={plane.address}",
        f"--secure-port={APISERVER_PORT}",
        f"--cert-dir={plane.folder / 'apiserver'}",
        f"--etcd-servers={plane.etcd_url}",
        f"--etcd-cafile={pki / 'ca.crt'}",
        f"--etcd-certfile={pki / 'apiserver-etcd.crt'}",
        f"--etcd-keyfile={pki / 'apiserver-etcd.key'}",
        f"--service-cluster-ip-range={plane.service_cidr}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--kubelet-client-certificate={pki / 'apiserver-kubelet.crt'}",
        f"--kubelet-client-key={pki / 'apiserver-kubelet.key'}",
        # The node names are no DNS names: logs and exec go to the kubelet by its address.
        "--kubelet-preferred-address-types=InternalIP",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        "--service-account-issuer=https://kubernetes.default.svc",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        "--allow-privileged=true",
        "--profiling=false",
    ]


def controller_manager_command(binary: Path, plane: ControlPlaneLayout) -> list[str]:
    pki = plane.folder / "pki"
    kubeconfig = plane.folder / "controller-manager.kubeconfig"
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={plane.address}",
        f"--secure-port={CONTROLLER_MANAGER_PORT}",
        f"--cert-dir={plane.folder / 'controller-manager'}",
        f"--cluster-signing-cert-file={pki / 'ca.crt'}",
        f"--cluster-signing-key-file={pki / 'ca.key'}",
        f"--root-ca-file={pki / 'ca.crt'}",
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--service-cluster-ip-range={plane.service_cidr}",
        "--use-service-account-credentials=true",
        # Each node's pod range is in its CNI configuration, not allocated here.
        "--allocate-node-cidrs=false",
        f"--node-monitor-grace-period={NODE_MONITOR_GRACE}",
        "--leader-elect=false",
        "--profiling=false",
    ]


def scheduler_command(binary: Path, plane: ControlPlaneLayout) -> list[str]:
    kubeconfig = plane.folder / "scheduler.kubeconfig"
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={plane.address}",
        f"--secure-port={SCHEDULER_PORT}",
        f"--cert-dir={plane.folder / 'scheduler'}",
        "--leader-elect=false",
        "--profiling=false",
    ]


def containerd_config(node: NodeLayout, sandbox_image: str) -> str:
    base = node.folder / "containerd"
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{base / "root"}"
state = "{base / "state"}"
# What this machine kind lacks (btrfs, zfs, devmapper, aufs): skipped instead of failing.
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "{node.containerd_socket}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{base / "opt"}"

[{cri}]
  sandbox_image = "{sandbox_image}"
  # Root here lacks CAP_SYS_RESOURCE: no lowering of a container's OOM score below ours.
  restrict_oom_score_adj = true
  stream_server_address = "{node.address}"
  stream_server_port = "0"
  # Pod network namespaces under the state folder, not /var/run/netns.
  netns_mounts_under_state_dir = true
  enable_selinux = false

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  # cgroup v1 and no systemd on this machine kind.
  SystemdCgroup = false
  Root = "{base / "runc"}"

[{cri}.cni]
  bin_dir = "{CNI_BIN_DIR}"
  conf_dir = "{node.folder / "cni" / "net.d"}"
"""


def cni_config(node: NodeLayout) -> str:
    network = ipaddress.ip_network(node.pod_cidr)
    hosts = list(network.hosts())
    config = {
        "cniVersion": "0.4.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": node.bridge,
                # The default route through the bridge address: services' addresses
                # (kube-proxy's DNAT on this host) lie outside the pods' range.
                "isDefaultGateway": True,
                # Pods reach beyond the node through its address; within it, as themselves.
                "ipMasq": True,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [
                        [
                            {
                                "subnet": str(network),
                                "rangeStart": str(hosts[9]),
                                "gateway": node.gateway,
                            }
                        ]
                    ],
                    "dataDir": str(node.folder / "cni" / "ipam"),
                },
            }
        ],
    }
    return json.dumps(config, indent=2)


def kubelet_config(node: NodeLayout, ca_file: Path) -> str:
    pki = node.shared / "pki"
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.address,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": node.address,
        "healthzPort": KUBELET_HEALTHZ_PORT,
        "tlsCertFile": str(pki / f"kubelet-{node.name}-serving.crt"),
        "tlsPrivateKeyFile": str(pki / f"kubelet-{node.name}-serving.key"),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca_file)},
        },
        "authorization": {"mode": "Webhook"},
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": node.cgroup_root,
        "failCgroupV1": False,
        "containerRuntimeEndpoint": f"unix://{node.containerd_socket}",
        # Without CAP_SYS_RESOURCE the kubelet cannot lower its own OOM score.
        "oomScoreAdj": 0,
        "failSwapOn": False,
        "resolvConf": "/etc/resolv.conf",
        "clusterDomain": "cluster.local",
        "nodeStatusUpdateFrequency": "4s",
        "nodeLeaseDurationSeconds": NODE_LEASE_SECONDS,
        # A shared development disk: evict on a nearly full disk only, never on its ratio.
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
    }
    return json.dumps(config, indent=2)


def kubelet_command(binary: Path, node: NodeLayout) -> list[str]:
    return [
        str(binary),
        f"--config={node.folder / 'kubelet-config.json'}",
        f"--kubeconfig={node.shared / f'kubelet-{node.name}.kubeconfig'}",
        f"--root-dir={node.folder / 'kubelet'}",
        f"--cert-dir={node.folder / 'kubelet-pki'}",
        f"--hostname-override={node.name}",
        f"--node-ip={node.address}",
        "--v=1",
    ]


def kube_proxy_config(node: NodeLayout, kubeconfig: Path, cluster_cidr: str) -> str:
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "bindAddress": node.address,
        "healthzBindAddress": f"{node.address}:{PROXY_HEALTHZ_PORT}",
        "metricsBindAddress": f"{node.address}:{PROXY_METRICS_PORT}",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": node.name,
        "clusterCIDR": cluster_cidr,
        "detectLocalMode": "ClusterCIDR",
        "nodePortAddresses": [f"{node.address}/32"],
        # Zero: leave the host's conntrack settings as they are.
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
        "iptables": {"syncPeriod": "30s", "minSyncPeriod": "1s"},
    }
    return json.dumps(config, indent=2)


def kube_proxy_command(binary: Path, node: NodeLayout) -> list[str]:
    return [str(binary), f"--config={node.folder / 'kube-proxy-config.json'}"]
