"""The cluster's two images, built offline as one-layer OCI archives (oci.py) and cached
under `<cache>/images/`, each file named by a hash of its inputs:

- the pod sandbox ("pause"): a static Go program (pause.go) that sleeps and reaps;
- the driver image `kafkaspark/spark:<tag>`: Debian bookworm (rootfs.py) with Java 17, a
  venv `/opt/venv` holding this environment's pyspark and the provider's `driver` extra
  (not the provider: each submit ships it), `SPARK_HOME=/opt/spark` (the venv's pyspark
  folder) with the Kafka connector and S3A jars in its `jars/`, and entrypoint.sh.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_kafkaspark.errors import LocalStackError
from airflow_provider_kafkaspark.spark.jars import connector_bundle, s3a_bundle
from airflow_provider_kafkaspark.versions import SPARK_VERSION
from kafkaspark_devstack.jars import bundle_jars
from kafkaspark_devstack.k8s.build import go_env
from kafkaspark_devstack.k8s.oci import ImageConfig, write_archive, write_layer
from kafkaspark_devstack.k8s.rootfs import rootfs_key, rootfs_tarball

HERE = Path(__file__).parent
PAUSE_NAME = "kafkaspark/pause"
DRIVER_NAME = "kafkaspark/spark"
# Bumped when the recipe below changes in a way its inputs do not show.
RECIPE = "1"
VENV = "/opt/venv"
SPARK_HOME = "/opt/spark"
JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
PY_VERSION = "python3.11"  # bookworm's python3
PIP_TIMEOUT = 1800.0
STEP_TIMEOUT = 600.0


class ImageBuildError(LocalStackError):
    """An image of the local Kubernetes cluster could not be built."""


@dataclass(frozen=True)
class Image:
    name: str  # as pods name it: kafkaspark/spark:<tag>
    archive: Path


def _drop_older(kept: Path) -> None:
    """Other archives of the same image (`spark-<tag>.tar`): about 2 GB each."""
    kind = kept.name.split("-", 1)[0]
    for older in kept.parent.glob(f"{kind}-*.tar"):
        if older != kept:
            older.unlink()


def _short_hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def pause_image(cache: Path) -> Image:
    source = (HERE / "pause.go").read_text()
    tag = _short_hash(RECIPE, source, sys.version)[:12]
    image = Image(f"{PAUSE_NAME}:{tag}", cache / "images" / f"pause-{tag}.tar")
    if image.archive.is_file():
        return image
    image.archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".pause-") as tmp:
        work = Path(tmp)
        (work / "go.mod").write_text("module kafkaspark.local/pause\n\ngo 1.22\n")
        (work / "main.go").write_text(source)
        root = work / "root"
        root.mkdir()
        done = subprocess.run(
            ["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(root / "pause"), "."],
            cwd=work,
            env=go_env(cache),
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            raise ImageBuildError(f"the pause program did not build: {done.stderr.strip()}")
        layer = work / "layer.tar"
        write_layer(root, layer)
        write_archive(layer, ImageConfig(entrypoint=["/pause"]), image.name, image.archive)
    _drop_older(image.archive)
    return image


def driver_requirements() -> list[str]:
    """pyspark at this package's Spark release and the `driver` extra, each pinned to the
    version in this environment: the image runs what the tests here ran against."""
    declared = importlib.metadata.requires("airflow-provider-kafkaspark") or []
    extras = [r.split(";")[0].strip() for r in declared if re.search(r"extra\s*==\s*.driver.", r)]
    pinned = [f"pyspark=={SPARK_VERSION}"]
    for requirement in extras:
        name = re.split(r"[<>=!~\[ ]", requirement, maxsplit=1)[0]
        try:
            pinned.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pinned.append(requirement)
    return pinned


def _jars() -> list[Path]:
    return [
        *bundle_jars(connector_bundle(SPARK_VERSION)),
        *bundle_jars(s3a_bundle(SPARK_VERSION)),
    ]


def driver_tag(requirements: list[str], jars: list[Path]) -> str:
    entrypoint = (HERE / "entrypoint.sh").read_text()
    return _short_hash(
        RECIPE,
        rootfs_key(),
        *requirements,
        *(f"{j.name}:{j.stat().st_size}" for j in jars),
        json.dumps(driver_env(), sort_keys=True),
        entrypoint,
    )


def driver_image_name(cache: Path) -> str:
    """The name without building: `kafkaspark/spark:<tag>`."""
    return f"{DRIVER_NAME}:{driver_tag(driver_requirements(), _jars())}"


# Inside the image's root: none of this host's pip settings (find-links, certificates).
CHROOT_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}


def _run(
    command: list[str],
    what: str,
    log_file: Path,
    timeout: float = STEP_TIMEOUT,
    env: dict[str, str] | None = None,
) -> None:
    with open(log_file, "ab") as out:
        out.write(f"\n$ {' '.join(command)}\n".encode())
        out.flush()
        try:
            done = subprocess.run(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
                env=env,
            )
        except subprocess.TimeoutExpired:
            raise ImageBuildError(
                f"{what} still ran after {timeout:.0f}s; see {log_file}"
            ) from None
    if done.returncode != 0:
        tail = log_file.read_text(errors="replace").splitlines()[-3:]
        raise ImageBuildError(
            f"{what} failed ({done.returncode}): {' | '.join(tail)}; see {log_file}"
        )


def wheelhouse(cache: Path, requirements: list[str], log_file: Path) -> Path:
    """The wheels of `requirements` and their dependencies, made by this environment's pip
    (its cache already holds most of them). The image's python3 is CPython 3.11 on glibc
    like this one, so the wheels fit it."""
    folder = cache / "wheels" / _short_hash(*requirements)
    if (folder / ".complete").is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    print("k8s image: collecting wheels with pip", flush=True)
    _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(folder), *requirements],
        "pip wheel",
        log_file,
        PIP_TIMEOUT,
    )
    (folder / ".complete").write_text("\n".join(requirements))
    return folder


def driver_env() -> dict[str, str]:
    return {
        "PATH": f"{VENV}/bin:{SPARK_HOME}/bin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "JAVA_HOME": JAVA_HOME,
        "SPARK_HOME": SPARK_HOME,
        "PYSPARK_PYTHON": f"{VENV}/bin/python",
        "PYSPARK_DRIVER_PYTHON": f"{VENV}/bin/python",
        "LANG": "C.UTF-8",
    }


def driver_image(cache: Path) -> Image:
    """The driver image's archive, built when its inputs changed (a few minutes)."""
    requirements = driver_requirements()
    jars = _jars()
    tag = driver_tag(requirements, jars)
    image = Image(f"{DRIVER_NAME}:{tag}", cache / "images" / f"spark-{tag}.tar")
    if image.archive.is_file():
        return image
    image.archive.parent.mkdir(parents=True, exist_ok=True)
    log_file = cache / "image.log"
    started = time.monotonic()
    base = rootfs_tarball(cache)
    wheels = wheelhouse(cache, requirements, log_file)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".spark-image-") as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        print(f"k8s image: building {image.name}", flush=True)
        with tarfile.open(base) as tar:
            tar.extractall(root, numeric_owner=True, filter="fully_trusted")
        _run(
            ["chroot", str(root), "/usr/bin/python3", "-m", "venv", VENV],
            "venv",
            log_file,
            env=CHROOT_ENV,
        )
        shutil.copytree(wheels, root / "tmp" / "wheels")
        _run(
            [
                "chroot",
                str(root),
                f"{VENV}/bin/pip",
                "install",
                "-q",
                "--no-index",
                "--no-cache-dir",
                "--find-links",
                "/tmp/wheels",
                *requirements,
            ],
            "pip install in the image",
            log_file,
            PIP_TIMEOUT,
            env=CHROOT_ENV,
        )
        shutil.rmtree(root / "tmp" / "wheels")
        spark = root / VENV.lstrip("/") / "lib" / PY_VERSION / "site-packages" / "pyspark"
        if not (spark / "jars").is_dir():
            raise ImageBuildError(f"pyspark has no jars folder in the image ({spark})")
        (root / SPARK_HOME.lstrip("/")).symlink_to(spark.relative_to(root / "opt"))
        for jar in jars:
            shutil.copy2(jar, spark / "jars" / jar.name)
        # Spark's image has its work dir there; executors write their files in it.
        (spark / "work-dir").mkdir(mode=0o777, exist_ok=True)
        (spark / "work-dir").chmod(0o777)
        entrypoint = root / "opt" / "entrypoint.sh"
        shutil.copy(HERE / "entrypoint.sh", entrypoint)
        entrypoint.chmod(0o755)
        (root / "etc" / "kafkaspark-image.json").write_text(
            json.dumps({"name": image.name, "requirements": requirements}, indent=1)
        )
        print("k8s image: writing the OCI archive", flush=True)
        layer = Path(tmp) / "layer.tar"
        write_layer(root, layer)
        shutil.rmtree(root)
        config = ImageConfig(
            entrypoint=["/opt/entrypoint.sh"],
            env=driver_env(),
            working_dir=f"{SPARK_HOME}/work-dir",
        )
        write_archive(layer, config, image.name, image.archive)
    _drop_older(image.archive)
    print(f"k8s image: {image.name} in {time.monotonic() - started:.0f}s: {image.archive}")
    return image
