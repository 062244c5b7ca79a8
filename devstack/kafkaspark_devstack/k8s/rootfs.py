"""The driver image's base: a Debian bookworm root file system made with debootstrap from
Debian's mirror (the one package source this machine reaches), kept as a tarball in the
cache so that later image builds start from it in seconds."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from airflow_provider_kafkaspark.errors import LocalStackError

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
# tini: the entrypoint runs Spark under it (zombie reaping, signal forwarding), as Spark's
# own image does; procps: Spark's scripts call `ps`.
PACKAGES = ("openjdk-17-jre-headless", "procps", "tini", "python3", "python3-venv", "bash")
DEBOOTSTRAP_TIMEOUT = 1800.0


class RootfsBuildError(LocalStackError):
    """debootstrap could not make the image's Debian root file system."""


def rootfs_key() -> str:
    text = "\n".join([SUITE, MIRROR, *PACKAGES])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def rootfs_tarball(cache: Path) -> Path:
    """The cached root file system; made with debootstrap when missing (some minutes)."""
    target = cache / f"rootfs-{SUITE}-{rootfs_key()}.tar"
    if target.is_file():
        return target
    if shutil.which("debootstrap") is None:
        raise RootfsBuildError("no `debootstrap` on PATH: `apt-get install debootstrap`")
    cache.mkdir(parents=True, exist_ok=True)
    log_file = cache / "debootstrap.log"
    started = time.monotonic()
    print(f"k8s image: debootstrap {SUITE} with {', '.join(PACKAGES)} (some minutes)", flush=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".rootfs-") as tmp:
        root = Path(tmp) / "root"
        with open(log_file, "wb") as out:
            done = subprocess.run(
                [
                    "debootstrap",
                    "--variant=minbase",
                    f"--include={','.join(PACKAGES)}",
                    SUITE,
                    str(root),
                    MIRROR,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=DEBOOTSTRAP_TIMEOUT,
                check=False,
            )
        if done.returncode != 0:
            tail = log_file.read_text(errors="replace").splitlines()[-3:]
            raise RootfsBuildError(
                f"debootstrap failed ({done.returncode}): {' | '.join(tail)}; see {log_file}"
            )
        # What a container does not need: the package lists and caches.
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in (root / junk).glob("*"):
                if path.is_file():
                    path.unlink()
        partial = target.with_suffix(".tar.partial")
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
            tar.add(root, arcname=".", filter=_numeric)
        partial.rename(target)
    print(f"k8s image: root file system in {time.monotonic() - started:.0f}s: {target}")
    return target


def _numeric(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uname = info.gname = ""
    return info
