"""The local Kubernetes launcher's pure parts: the wrapper module that builds the
binaries, the OCI archive containerd imports, and what binds where."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

from kafkaspark_devstack.k8s import build, config, node
from kafkaspark_devstack.k8s.host import HostSetupError
from kafkaspark_devstack.k8s.oci import ImageConfig, full_name, write_archive, write_layer

GOMOD = """module k8s.io/kubernetes

go 1.24.0

require (
\tk8s.io/api v0.0.0
\tgo.etcd.io/etcd/server/v3 v3.6.4 // indirect
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tgithub.com/other/thing => github.com/fork/thing v1.0.0
)
"""


def test_the_wrapper_replaces_each_staging_module_by_its_published_tag() -> None:
    assert build.staging_modules(GOMOD) == ["k8s.io/api", "k8s.io/client-go"]
    text = build.wrapper_gomod(GOMOD, "v1.34.4", "v3.6.4")
    assert "\tk8s.io/api => k8s.io/api v0.34.4" in text
    assert "\tk8s.io/client-go => k8s.io/client-go v0.34.4" in text
    assert "github.com/fork" not in text
    assert "\tk8s.io/kubernetes v1.34.4" in text
    assert "go 1.24.0" in text


def test_the_binaries_report_their_release() -> None:
    flags = build.ldflags("v1.34.4")
    assert "-X k8s.io/component-base/version.gitVersion=v1.34.4" in flags
    assert "-X k8s.io/component-base/version.gitMinor=34" in flags


def test_a_pod_image_name_is_the_one_containerd_stores() -> None:
    assert full_name("kafkaspark/spark:abc") == "docker.io/kafkaspark/spark:abc"
    assert full_name("busybox:1") == "docker.io/library/busybox:1"
    assert full_name("registry.local:5000/x/y:1") == "registry.local:5000/x/y:1"


def test_the_oci_archive_is_a_layout_whose_digests_hold(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "pause").write_bytes(b"\x7fELF")
    layer = tmp_path / "layer.tar"
    write_layer(root, layer)
    archive = tmp_path / "image.tar"
    write_archive(layer, ImageConfig(entrypoint=["/bin/pause"]), "kafkaspark/pause:t", archive)
    with tarfile.open(archive) as tar:
        blobs = {
            m.name.rsplit("/", 1)[1]: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.name.startswith("blobs/")
        }
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
    for digest, data in blobs.items():
        assert hashlib.sha256(data).hexdigest() == digest
    entry = index["manifests"][0]
    assert entry["annotations"]["io.containerd.image.name"] == "docker.io/kafkaspark/pause:t"
    manifest = json.loads(blobs[entry["digest"].split(":")[1]])
    image_config = json.loads(blobs[manifest["config"]["digest"].split(":")[1]])
    assert image_config["rootfs"]["diff_ids"] == [manifest["layers"][0]["digest"]]
    assert image_config["config"]["Entrypoint"] == ["/bin/pause"]
    layer_blob = blobs[manifest["layers"][0]["digest"].split(":")[1]]
    with tarfile.open(fileobj=io.BytesIO(layer_blob)) as layer_tar:
        assert layer_tar.getnames() == ["bin", "bin/pause"]


def test_every_daemon_binds_to_the_bridge_address(tmp_path: Path) -> None:
    plane = config.ControlPlaneLayout("10.244.7.1", "10.96.7.0/24", tmp_path)
    node = config.NodeLayout("n2", "10.244.7.1", "kskube7", "10.244.7.0/24", tmp_path)
    assert plane.service_ip == "10.96.7.1"
    commands = [
        config.etcd_command(Path("etcd"), plane, "n2"),
        config.apiserver_command(Path("a"), plane),
        config.controller_manager_command(Path("c"), plane),
        config.scheduler_command(Path("s"), plane),
    ]
    text = " ".join(" ".join(c) for c in commands)
    text += config.containerd_config(node, "p") + config.kubelet_config(node, tmp_path / "ca")
    text += config.kube_proxy_config(node, tmp_path / "k", node.pod_cidr)
    assert "0.0.0.0" not in text and "127.0.0.1" not in text
    assert "--bind-address=10.244.7.1" in text
    cni = json.loads(config.cni_config(node))["plugins"][0]
    assert cni["bridge"] == "kskube7"
    assert cni["ipam"]["ranges"][0][0]["gateway"] == "10.244.7.1"
    kubelet = json.loads(config.kubelet_config(node, tmp_path / "ca"))
    assert (kubelet["cgroupDriver"], kubelet["oomScoreAdj"]) == ("cgroupfs", 0)


def test_an_added_node_is_another_host_on_the_bridge_with_pods_of_its_own(
    tmp_path: Path,
) -> None:
    host = node.plan("kafkaspark-node-2", 2, "kskube0", "10.244.0.0/24")
    assert (host.namespace, host.veth, host.address) == ("kskube0-n2", "kskube0n2", "10.244.0.2")
    assert (host.pod_bridge, host.pod_cidr, host.pod_gateway) == (
        "kskube1",
        "10.244.1.0/24",
        "10.244.1.1",
    )
    assert host.cgroup_root == "/kafkaspark-node-2" and len(host.veth) <= 15
    commands = [" ".join(c) for c in node.up_commands(host, "kskube0", "10.244.0.1")]
    assert "ip -n kskube0-n2 route add default via 10.244.0.1" in commands
    assert "ip route add 10.244.1.0/24 via 10.244.0.2 dev kskube0" in commands
    layout = config.NodeLayout(
        name=host.name,
        address=host.address,
        bridge=host.pod_bridge,
        pod_cidr=host.pod_cidr,
        folder=tmp_path / "nodes" / host.name,
        cluster_folder=tmp_path,
        cgroup_root=host.cgroup_root,
        pod_gateway=host.pod_gateway,
    )
    kubelet = json.loads(config.kubelet_config(layout, tmp_path / "pki" / "ca.crt"))
    assert kubelet["cgroupRoot"] == "/kafkaspark-node-2" and kubelet["address"] == "10.244.0.2"
    assert kubelet["tlsCertFile"] == str(tmp_path / "pki" / "kubelet-kafkaspark-node-2-serving.crt")
    cni = json.loads(config.cni_config(layout))["plugins"][0]
    assert cni["bridge"] == "kskube1"
    assert cni["ipam"]["ranges"][0][0]["gateway"] == "10.244.1.1"
    assert str(layout.folder) in config.containerd_config(layout, "pause:1")
    line = " ".join(config.kubelet_command(tmp_path / "kubelet", layout))
    assert f"--kubeconfig={tmp_path / 'kubelet-kafkaspark-node-2.kubeconfig'}" in line
    assert f"--root-dir={layout.folder / 'kubelet'}" in line
    for bad in (1, 201):
        try:
            node.plan("n", bad, "kskube0", "10.244.0.0/24")
        except HostSetupError:
            continue
        raise AssertionError(f"index {bad} accepted")
