"""Kubernetes and etcd binaries built with the local Go toolchain from the Go module proxy
(the only place this machine can get them from).

`k8s.io/kubernetes` cannot be `go install`ed: its go.mod replaces every `k8s.io/*` staging
module with a folder of its own repository, and replace lines only count in the main
module. So a small wrapper module is written under the cache: it requires the release and
replaces each staging module with its published `v0.<minor>.<patch>` tag, the same code.
GOPATH, the module cache and the build cache stay under the cache folder, so a second
build is a link step, and the binaries are skipped when their stamp names this version.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_kafkaspark.errors import LocalStackError

log = logging.getLogger(__name__)

KUBERNETES_VERSION = "v1.34.4"
ETCD_VERSION = "v3.6.4"
CACHE_DIR_ENV = "KAFKASPARK_K8S_CACHE"
KUBE_PROGRAMS = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
    "kubectl",
)
PROGRAMS = (*KUBE_PROGRAMS, "etcd")
STAMP = ".versions.json"
WRAPPER_MODULE = "kafkaspark.local/k8sbuild"
# A cold build compiles some 3,000 packages: about 15 minutes on 2 cores.
BUILD_TIMEOUT = 3600.0
PROGRESS_EVERY = 60.0


class KubernetesBuildError(LocalStackError):
    """The Go toolchain could not fetch or build the Kubernetes binaries."""


@dataclass(frozen=True)
class Binaries:
    folder: Path

    def path(self, program: str) -> Path:
        return self.folder / program


def default_cache_dir() -> Path:
    """`$KAFKASPARK_K8S_CACHE`, else `.cache/k8s` of the source tree (next to the jar cache)."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env)
    # devstack/kafkaspark_devstack/k8s/build.py -> ../../../..
    return Path(__file__).resolve().parents[3] / ".cache" / "k8s"


def go_env(cache: Path) -> dict[str, str]:
    gopath = cache / "gopath"
    env = dict(os.environ)
    env.update(
        GOPATH=str(gopath),
        GOMODCACHE=str(gopath / "pkg" / "mod"),
        GOCACHE=str(cache / "gocache"),
        # -modcacherw: the module cache stays deletable with `rm -r`.
        GOFLAGS="-modcacherw -buildvcs=false",
        # The go.mod asks for an older Go; never let the go command fetch a toolchain.
        GOTOOLCHAIN="local",
        CGO_ENABLED="0",
    )
    return env


def staging_modules(gomod_text: str) -> list[str]:
    """The modules k8s.io/kubernetes's go.mod replaces with its own `./staging` folders."""
    return sorted(set(re.findall(r"^\s*(k8s\.io/[\w.-]+)\s*=>\s*\./staging/", gomod_text, re.M)))


def staging_version(kube_version: str) -> str:
    """v1.34.4 -> v0.34.4: the staging modules' tags."""
    return "v0." + kube_version.removeprefix("v1.")


def wrapper_gomod(gomod_text: str, kube_version: str, etcd_version: str) -> str:
    go_line = re.search(r"^go\s+(\S+)", gomod_text, re.M)
    lines = [
        f"module {WRAPPER_MODULE}",
        "",
        f"go {go_line.group(1) if go_line else '1.24.0'}",
        "",
        "require (",
        f"\tk8s.io/kubernetes {kube_version}",
        f"\tgo.etcd.io/etcd/server/v3 {etcd_version}",
        ")",
        "",
        "replace (",
    ]
    staged = staging_version(kube_version)
    lines += [f"\t{module} => {module} {staged}" for module in staging_modules(gomod_text)]
    lines += [")", ""]
    return "\n".join(lines)


def wrapper_tools(packages: list[str]) -> str:
    # The tools pattern: blank imports keep `go mod tidy` from dropping the requirements;
    # the build tag keeps the file itself out of every build.
    imports = "\n".join(f'\t_ "{p}"' for p in packages)
    return f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n"


def main_packages(kube_version: str) -> dict[str, str]:
    packages = {name: f"k8s.io/kubernetes/cmd/{name}" for name in KUBE_PROGRAMS}
    packages["etcd"] = "go.etcd.io/etcd/server/v3"
    return packages


def ldflags(kube_version: str) -> str:
    """The version variables Kubernetes's own build sets (hack/lib/version.sh): the kubelet
    reports it on its node and kubectl prints it; without them it is v0.0.0-master."""
    major, minor = kube_version.removeprefix("v").split(".")[:2]
    values = {
        "gitVersion": kube_version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "gitCommit": "0000000000000000000000000000000000000000",
        "buildDate": "1970-01-01T00:00:00Z",
    }
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {package}.{key}={value}" for key, value in values.items()]
    return " ".join(flags)


def stamp(kube_version: str, etcd_version: str) -> dict[str, str]:
    return {"kubernetes": kube_version, "etcd": etcd_version}


def built(cache: Path, kube_version: str = KUBERNETES_VERSION) -> Binaries | None:
    """The binaries when every one is there and the stamp names these versions."""
    folder = cache / "bin"
    try:
        found = json.loads((folder / STAMP).read_text())
    except (OSError, ValueError):
        return None
    if found != stamp(kube_version, ETCD_VERSION):
        return None
    if not all((folder / p).is_file() for p in PROGRAMS):
        return None
    return Binaries(folder)


def binaries(cache: Path | None = None) -> Binaries:
    """The built binaries, or `KubernetesBuildError` telling how to build them."""
    cache = cache or default_cache_dir()
    found = built(cache)
    if found is None:
        raise KubernetesBuildError(
            f"no Kubernetes {KUBERNETES_VERSION} binaries under {cache / 'bin'}: "
            "run `kafkaspark local k8s build` (or `make setup-k8s`)"
        )
    return found


def run_go(args: list[str], cwd: Path, env: dict[str, str], log_file: Path, what: str) -> None:
    """One go command, its output appended to `log_file`, a progress line every minute."""
    started = time.monotonic()
    with open(log_file, "ab") as out:
        out.write(f"\n$ go {' '.join(args)}\n".encode())
        out.flush()
        child = subprocess.Popen(
            ["go", *args], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
        )
        while True:
            try:
                code = child.wait(PROGRESS_EVERY)
                break
            except subprocess.TimeoutExpired:
                elapsed = time.monotonic() - started
                if elapsed > BUILD_TIMEOUT:
                    child.kill()
                    child.wait()
                    raise KubernetesBuildError(
                        f"{what} still ran after {BUILD_TIMEOUT:.0f}s; see {log_file}"
                    ) from None
                print(f"k8s build: {what}: {elapsed / 60:.0f} min", flush=True)
    if code != 0:
        tail = log_file.read_text(errors="replace").splitlines()[-5:]
        raise KubernetesBuildError(
            f"{what} failed (go exit {code}): {' | '.join(tail)}; see {log_file}"
        )


def build(
    cache: Path | None = None,
    kube_version: str = KUBERNETES_VERSION,
    etcd_version: str = ETCD_VERSION,
    force: bool = False,
) -> Binaries:
    """Build (or find) the binaries under `<cache>/bin`."""
    cache = (cache or default_cache_dir()).absolute()
    if not force and (found := built(cache, kube_version)) is not None:
        return found
    if shutil.which("go") is None:
        raise KubernetesBuildError("no `go` on PATH: the Kubernetes binaries are built with it")
    cache.mkdir(parents=True, exist_ok=True)
    env = go_env(cache)
    log_file = cache / "build.log"
    module = cache / "wrapper"
    module.mkdir(exist_ok=True)
    print(f"k8s build: fetching k8s.io/kubernetes@{kube_version}'s go.mod", flush=True)
    run_go(
        ["mod", "download", "-json", f"k8s.io/kubernetes@{kube_version}"],
        module,
        env,
        log_file,
        "go mod download",
    )
    gomod = (
        Path(env["GOMODCACHE"]) / "cache" / "download" / "k8s.io" / "kubernetes" / "@v"
    ) / f"{kube_version}.mod"
    gomod_text = gomod.read_text()
    packages = main_packages(kube_version)
    (module / "go.mod").write_text(wrapper_gomod(gomod_text, kube_version, etcd_version))
    (module / "tools.go").write_text(wrapper_tools(sorted(packages.values())))
    print("k8s build: resolving the module graph (go mod tidy)", flush=True)
    run_go(["mod", "tidy"], module, env, log_file, "go mod tidy")
    out = cache / "bin"
    out.mkdir(exist_ok=True)
    (out / STAMP).unlink(missing_ok=True)
    print(
        f"k8s build: compiling {', '.join(packages)} (a cold build takes about 15 minutes)",
        flush=True,
    )
    started = time.monotonic()
    run_go(
        [
            "build",
            "-trimpath",
            "-ldflags",
            ldflags(kube_version),
            "-o",
            str(out) + "/",
            *[packages[name] for name in KUBE_PROGRAMS],
        ],
        module,
        env,
        log_file,
        "go build (kubernetes)",
    )
    # etcd's main package is the module's root: `go build -o dir` would name it `v3`.
    run_go(
        ["build", "-trimpath", "-ldflags", "-s -w", "-o", str(out / "etcd"), packages["etcd"]],
        module,
        env,
        log_file,
        "go build (etcd)",
    )
    (out / STAMP).write_text(json.dumps(stamp(kube_version, etcd_version)))
    log.info("built in %.0fs", time.monotonic() - started)
    print(f"k8s build: done in {time.monotonic() - started:.0f}s: {out}", flush=True)
    return Binaries(out)
