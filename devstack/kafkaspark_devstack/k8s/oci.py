"""A one-layer OCI image archive written with tarfile, json and sha256: what
`ctr images import` loads, so the cluster needs neither a registry nor docker."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"
CHUNK = 1 << 20


@dataclass(frozen=True)
class ImageConfig:
    entrypoint: list[str]
    cmd: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    working_dir: str = "/"

    def as_json(self, diff_id: str) -> dict[str, object]:
        return {
            "architecture": "amd64",
            "os": "linux",
            "config": {
                "Entrypoint": self.entrypoint,
                "Cmd": self.cmd,
                "Env": [f"{k}={v}" for k, v in self.env.items()],
                "WorkingDir": self.working_dir,
            },
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        }


def full_name(name: str) -> str:
    """`kafkaspark/spark:t` -> `docker.io/kafkaspark/spark:t`: the name the kubelet looks up
    for a pod's `image: kafkaspark/spark:t`."""
    first = name.split("/", 1)[0]
    if "/" not in name:
        return f"docker.io/library/{name}"
    if "." in first or ":" in first or first == "localhost":
        return name
    return f"docker.io/{name}"


def _entries(root: Path) -> Iterator[tuple[Path, str]]:
    """Every path under `root` in a stable order, parents before children."""
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        base = Path(folder)
        for name in sorted(dirs) + sorted(files):
            path = base / name
            yield path, path.relative_to(root).as_posix()


def write_layer(root: Path, out: Path) -> None:
    """The folder `root` as an uncompressed layer tar (owners kept as numbers). Uncompressed:
    the archive only travels to the local content store, and gzip would cost a minute."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for path, name in _entries(root):
            info = tar.gettarinfo(str(path), arcname=name)
            info.uname = info.gname = ""
            if info.isreg():
                with open(path, "rb") as data:
                    tar.addfile(info, data)
            else:
                tar.addfile(info)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        while chunk := data.read(CHUNK):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def _blob(data: bytes) -> tuple[str, bytes]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def write_archive(layer: Path, config: ImageConfig, name: str, out: Path) -> None:
    """The OCI image layout (oci-layout, index.json, blobs/sha256/...) as one tar at `out`."""
    layer_digest = _sha256_file(layer)
    config_digest, config_bytes = _blob(
        json.dumps(config.as_json(layer_digest), sort_keys=True).encode()
    )
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": CONFIG_TYPE, "digest": config_digest, "size": len(config_bytes)},
        "layers": [{"mediaType": LAYER_TYPE, "digest": layer_digest, "size": layer.stat().st_size}],
    }
    manifest_digest, manifest_bytes = _blob(json.dumps(manifest, sort_keys=True).encode())
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else "latest"
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX_TYPE,
        "manifests": [
            {
                "mediaType": MANIFEST_TYPE,
                "digest": manifest_digest,
                "size": len(manifest_bytes),
                "platform": {"architecture": "amd64", "os": "linux"},
                # containerd names the imported image after the first annotation.
                "annotations": {
                    "io.containerd.image.name": full_name(name),
                    "org.opencontainers.image.ref.name": tag,
                },
            }
        ],
    }
    partial = out.with_name(out.name + ".partial")
    with tarfile.open(partial, "w") as tar:
        _add_bytes(tar, "oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        _add_bytes(tar, "index.json", json.dumps(index).encode())
        for digest, data in ((config_digest, config_bytes), (manifest_digest, manifest_bytes)):
            _add_bytes(tar, "blobs/sha256/" + digest.split(":")[1], data)
        tar.add(str(layer), arcname="blobs/sha256/" + layer_digest.split(":")[1])
    partial.rename(out)
