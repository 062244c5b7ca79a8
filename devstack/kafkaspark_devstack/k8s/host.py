"""What the cluster changes on its host and how `stop` takes it back: the bridge, the
sysctls the kubelet and the CNI plugin set, the iptables chains of kube-proxy, the kubelet
and the CNI plugin, the mounts under the cluster's folder, the pods' cgroups, and the
processes (containerd's shims and the containers under them)."""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from airflow_provider_kafkaspark.errors import LocalStackError
from kafkaspark_devstack.process import command_lines, program_of

log = logging.getLogger(__name__)

# The kubelet sets the first six at start (kernel tunables it wants); the bridge plugin
# turns on forwarding; kube-proxy may set route_localnet.
SYSCTLS = (
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
    "net.ipv4.ip_forward",
    "net.ipv4.conf.all.route_localnet",
)
CGROUP_ROOT = Path("/sys/fs/cgroup")
CHAIN_PREFIXES = ("KUBE-", "CNI-")


class HostSetupError(LocalStackError):
    """The host could not be prepared for the cluster (bridge, cgroups)."""


def _sysctl_path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


def read_sysctls() -> dict[str, str]:
    found = {}
    for name in SYSCTLS:
        try:
            found[name] = _sysctl_path(name).read_text().strip()
        except OSError:
            pass
    return found


def restore_sysctls(saved: dict[str, str]) -> list[str]:
    """Write back what `read_sysctls` saw; returns the names that had changed."""
    changed = []
    for name, value in saved.items():
        path = _sysctl_path(name)
        try:
            if path.read_text().strip() != value:
                path.write_text(value + "\n")
                changed.append(name)
        except OSError as exc:
            log.warning("could not restore %s=%s: %s", name, value, exc)
    return changed


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=check)


def link_exists(name: str) -> bool:
    return _ip("link", "show", "dev", name, check=False).returncode == 0


def create_bridge(name: str, address: str, prefix: int) -> None:
    if link_exists(name):
        raise HostSetupError(
            f"network interface {name} already exists: a cluster runs or was not stopped "
            "(`kafkaspark local k8s stop`, or `ip link del` it)"
        )
    try:
        _ip("link", "add", name, "type", "bridge")
        _ip("addr", "add", f"{address}/{prefix}", "dev", name)
        _ip("link", "set", name, "up")
    except subprocess.CalledProcessError as exc:
        raise HostSetupError(f"could not create bridge {name}: {exc.stderr.strip()}") from None


def delete_bridge(name: str) -> None:
    """The bridge and the veths of pods still attached to it."""
    if not link_exists(name):
        return
    listed = _ip("-o", "link", "show", "master", name, check=False).stdout
    for port in re.findall(r"^\d+:\s+([^:@\s]+)", listed, re.M):
        _ip("link", "del", port, check=False)
    _ip("link", "del", name, check=False)


def _iptables_save(binary: str) -> str:
    done = subprocess.run([f"{binary}-save"], capture_output=True, text=True, timeout=30)
    return done.stdout if done.returncode == 0 else ""


def cluster_chains(binary: str = "iptables") -> list[str]:
    """`table/chain` of every KUBE-* and CNI-* chain."""
    table = ""
    found = []
    for line in _iptables_save(binary).splitlines():
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith(":") and line[1:].startswith(CHAIN_PREFIXES):
            found.append(f"{table}/{line[1:].split()[0]}")
    return found


def remove_chains(network: str) -> None:
    """Every rule that jumps into a KUBE-* chain, or into a CNI-* chain of `network`'s
    pods (the bridge plugin's masquerade chains, named by a comment), and those chains.

    kube-proxy's own `--cleanup` leaves the kubelet's KUBE-KUBELET-CANARY and
    KUBE-IPTABLES-HINT chains and knows nothing of the CNI plugin's; this covers all three,
    also after a crash, with the daemons gone."""
    for binary in ("iptables", "ip6tables"):
        table = ""
        ours: set[tuple[str, str]] = set()
        jumps: list[tuple[str, str, str]] = []
        for line in _iptables_save(binary).splitlines():
            if line.startswith("*"):
                table = line[1:]
            elif line.startswith(":") and line[1:].startswith("KUBE-"):
                ours.add((table, line[1:].split()[0]))
            elif line.startswith("-A "):
                parts = line.split()
                target = parts[parts.index("-j") + 1] if "-j" in parts else ""
                if target.startswith("CNI-") and f'name: \\"{network}\\"' in line:
                    ours.add((table, target))
                if target.startswith(CHAIN_PREFIXES):
                    jumps.append((table, target, line))
        for table_name, target, rule in jumps:
            if (table_name, target) in ours:
                _delete_rule(binary, table_name, rule)
        for table_name, chain in ours:
            subprocess.run([binary, "-t", table_name, "-F", chain], capture_output=True, timeout=30)
        for table_name, chain in ours:
            subprocess.run([binary, "-t", table_name, "-X", chain], capture_output=True, timeout=30)


def _delete_rule(binary: str, table: str, rule: str) -> None:
    # iptables-restore takes the rule as iptables-save printed it (quotes included), and
    # --noflush leaves everything else alone.
    text = f"*{table}\n{rule.replace('-A ', '-D ', 1)}\nCOMMIT\n"
    subprocess.run(
        [f"{binary}-restore", "--noflush"], input=text, capture_output=True, text=True, timeout=30
    )


# containerd 1.6's shims put their sockets there whatever the daemon's state folder.
SHIM_SOCKETS = Path("/run/containerd/s")


def remove_empty_shim_folders() -> None:
    """/run/containerd/s and /run/containerd, when empty (a host containerd's stay)."""
    for folder in (SHIM_SOCKETS, SHIM_SOCKETS.parent):
        try:
            folder.rmdir()
        except OSError:
            return


def mounts_under(folder: Path) -> list[str]:
    """Mount points under `folder`, deepest first (the order to unmount them in)."""
    prefix = str(folder.resolve()).rstrip("/") + "/"
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefix) or point == prefix.rstrip("/"):
            found.append(point)
    return sorted(set(found), key=lambda p: p.count("/"), reverse=True)


def unmount_all(folder: Path) -> list[str]:
    """Unmount every mount under `folder`; returns the ones that stayed."""
    for _ in range(3):
        points = mounts_under(folder)
        if not points:
            return []
        for point in points:
            done = subprocess.run(["umount", point], capture_output=True, timeout=30)
            if done.returncode != 0:
                # Busy (a process still inside): detach it, it goes when the last one leaves.
                subprocess.run(["umount", "-l", point], capture_output=True, timeout=30)
    return mounts_under(folder)


def cgroup_hierarchies() -> list[Path]:
    try:
        return [p for p in CGROUP_ROOT.iterdir() if (p / "cgroup.procs").exists()]
    except OSError:
        return []


def cgroup_pids(name: str) -> set[int]:
    """Processes in the cgroup `name` (e.g. "kubepods") and below, in any hierarchy."""
    pids: set[int] = set()
    for hierarchy in cgroup_hierarchies():
        top = hierarchy / name.strip("/")
        if top.is_dir():
            for procs in top.rglob("cgroup.procs"):
                try:
                    pids.update(int(p) for p in procs.read_text().split())
                except OSError:
                    pass
    return pids


def cgroups_left(name: str) -> list[str]:
    relative = name.strip("/")
    return [str(h / relative) for h in cgroup_hierarchies() if (h / relative).is_dir()]


def remove_cgroups(name: str) -> list[str]:
    """Remove the cgroup `name` and its children (bottom up) in every hierarchy; returns
    those that stayed (a process still in them)."""
    for hierarchy in cgroup_hierarchies():
        top = hierarchy / name.strip("/")
        if not top.is_dir():
            continue
        folders = sorted(
            (p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
        )
        for folder in [*folders, top]:
            try:
                folder.rmdir()
            except OSError:
                pass
    return cgroups_left(name)


# The programs a cluster runs on its host; the containers' own processes are in its cgroups.
PROGRAMS = {
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
    "containerd",
    "containerd-shim-runc-v2",
    "runc",
}


def cluster_pids(folder: Path) -> list[int]:
    """Processes of the cluster in `folder`: one of its programs with a path of that folder
    on its command line (a shell that merely names the folder is not one)."""
    marker = str(folder).encode()
    return [
        pid
        for pid, command in command_lines()
        if program_of(command).decode(errors="replace") in PROGRAMS and marker in command
    ]


def kill_all(pids: set[int] | list[int], timeout: float = 10.0) -> list[int]:
    """SIGKILL `pids`, wait until they are gone; returns those still there."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    left = list(pids)
    while left and time.monotonic() < deadline:
        left = [p for p in left if _alive(p)]
        time.sleep(0.1)
    return left


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
