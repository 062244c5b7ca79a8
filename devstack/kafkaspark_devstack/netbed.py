"""Several "hosts" on one machine, for tests that must fail when a pid, a path or a loopback
address leaks from one host to another. Each host is a network namespace joined to a bridge
(in a hub namespace of its own, so nothing is added to the machine's own network), and a
PID and UTS namespace with its own host name and `/etc/hosts`, kept alive by a sleeping
init process; every command run "on" the host enters those namespaces (`nsenter`).

Addresses exist only inside the bed's namespaces: the machine's own namespace has no route
to them (there a 10.x address would go out through the default gateway), so a client must
run on a host of the bed, never in the test process itself. Killing a host's init ends every
process of that host (the kernel empties a PID namespace whose init dies); `down()` does
that for each host, then deletes the namespaces, whose veth pairs go with them. Needs root.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.errors import LocalStackError
from kafkaspark_devstack.process import child_pids, proc_cmdline

log = logging.getLogger(__name__)

SUBNET = "10.77.0"  # a /24 that lives only inside the bed's namespaces


class NetBedError(LocalStackError):
    """A namespace, link or host init could not be made or found."""


@dataclass(frozen=True)
class BedHost:
    name: str  # the host name its processes see (socket.gethostname())
    namespace: str
    address: str


def plan_hosts(prefix: str, names: list[str], subnet: str = SUBNET) -> list[BedHost]:
    """Hosts with namespaces named after `prefix` and addresses .1, .2, ... of `subnet`."""
    if not 0 < len(names) < 250 or len(set(names)) != len(names):
        raise NetBedError(f"host names must be 1..249 distinct names, got {names}")
    return [BedHost(name, f"{prefix}-{name}", f"{subnet}.{i}") for i, name in enumerate(names, 1)]


def hosts_file(hosts: list[BedHost]) -> str:
    lines = ["127.0.0.1 localhost"] + [f"{h.address} {h.name}" for h in hosts]
    return "\n".join(lines) + "\n"


def up_commands(hub: str, hosts: list[BedHost]) -> list[list[str]]:
    """`ip` commands that make the bridge in the hub namespace and each host's veth pair
    directly between the hub and the host (no interface in the machine's namespace)."""
    commands = [
        ["ip", "netns", "add", hub],
        ["ip", "-n", hub, "link", "add", "br0", "type", "bridge"],
        ["ip", "-n", hub, "link", "set", "br0", "up"],
        ["ip", "-n", hub, "link", "set", "lo", "up"],
    ]
    for i, host in enumerate(hosts):
        port, ns = f"p{i}", host.namespace
        commands += [
            ["ip", "netns", "add", host.namespace],
            ["ip", "-n", hub, *f"link add {port} type veth peer name eth0 netns {ns}".split()],
            ["ip", "-n", hub, "link", "set", port, "master", "br0", "up"],
            ["ip", "-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0"],
            ["ip", "-n", host.namespace, "link", "set", "lo", "up"],
            ["ip", "-n", host.namespace, "link", "set", "eth0", "up"],
        ]
    return commands


def init_command(host: BedHost, hosts_path: Path) -> list[str]:
    """The host's init: new PID and UTS namespaces inside its network namespace, its own
    /etc/hosts and host name, then sleep as PID 1 (the kernel ends the host when it dies)."""
    script = 'mount --bind "$1" /etc/hosts && hostname "$0" && exec sleep infinity'
    return [
        "ip", "netns", "exec", host.namespace,
        "unshare", "--uts", "--pid", "--fork", "--mount-proc", "--kill-child",
        "sh", "-c", script, host.name, str(hosts_path),
    ]  # fmt: skip


def enter_command(init_pid: int, argv: list[str], cwd: str | None = None) -> list[str]:
    """Run `argv` on a host: in the namespaces of its init (mount, UTS, network, PID)."""
    command = ["nsenter", "-t", str(init_pid), "-m", "-u", "-n", "-p"]
    if cwd:
        command.append(f"--wd={cwd}")
    return [*command, "--", *argv]


class NetBed:
    """`with NetBed(base_dir, ["airflow", "yarn", "kafka"]) as bed: bed.run("kafka", [...])`"""

    def __init__(
        self, base_dir: str | os.PathLike[str], names: list[str], prefix: str = ""
    ) -> None:
        self.base_dir = Path(base_dir).resolve()
        self.prefix = prefix or f"kst{os.getpid() % 100000}"
        self.hub = f"{self.prefix}-hub"
        self.hosts = {h.name: h for h in plan_hosts(self.prefix, names)}
        self._inits: dict[str, subprocess.Popen[bytes]] = {}
        self._init_pids: dict[str, int] = {}

    def address(self, host: str) -> str:
        return self.hosts[host].address

    def folder(self, host: str) -> Path:
        """The host's own working folder: nothing under it belongs to another host."""
        path = self.base_dir / "hosts" / host
        path.mkdir(parents=True, exist_ok=True)
        return path

    def up(self, timeout_s: float = 30.0) -> NetBed:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        hosts_path = self.base_dir / "hosts.txt"
        hosts_path.write_text(hosts_file(list(self.hosts.values())))
        try:
            for command in up_commands(self.hub, list(self.hosts.values())):
                _run(command)
            for name, host in self.hosts.items():
                self._inits[name] = subprocess.Popen(
                    init_command(host, hosts_path),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            deadline = time.monotonic() + timeout_s
            for name in self.hosts:
                self._init_pids[name] = self._find_init(name, deadline)
        except BaseException:
            self.down()
            raise
        return self

    def command(self, host: str, argv: list[str], cwd: str | None = None) -> list[str]:
        return enter_command(self._init_pids[host], argv, cwd)

    def run(
        self,
        host: str,
        argv: list[str],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 60.0,
    ) -> subprocess.CompletedProcess[str]:
        """Run `argv` on `host` (in `cwd` there, with `env`) and collect its output."""
        return subprocess.run(
            self.command(host, argv, cwd),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=env,
        )

    def popen(
        self, host: str, argv: list[str], *, cwd: str | None = None, **kwargs: Any
    ) -> subprocess.Popen[bytes]:
        """Start `argv` on `host`; it ends with the host at the latest."""
        return subprocess.Popen(self.command(host, argv, cwd), **kwargs)

    def kill_host(self, host: str) -> None:
        """Every process of `host` ends at once, as when a machine loses power: its init is
        killed, and the kernel empties the host's PID namespace. Its network stays, with no
        process left to answer; `down()` still cleans it up."""
        pid = self._init_pids.get(host)
        if pid is None:
            raise NetBedError(f"bed host {host!r} is not up")
        os.kill(pid, signal.SIGKILL)
        proc = self._inits.get(host)
        if proc is not None:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                log.warning("bed host %s: its unshare did not exit", host)

    def boot_host(self, host: str, timeout_s: float = 30.0) -> None:
        """`host` back after `kill_host`, as a machine powered on again: a new init in a new
        PID namespace, on the same network and with the same folder (its disk), nothing
        running until something is started there."""
        proc = self._inits.get(host)
        if proc is not None and proc.poll() is None:
            raise NetBedError(f"bed host {host!r} is up: kill_host it first")
        self._inits[host] = subprocess.Popen(
            init_command(self.hosts[host], self.base_dir / "hosts.txt"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._init_pids[host] = self._find_init(host, time.monotonic() + timeout_s)

    def down(self) -> None:
        """End every host's processes (their init dies), then delete the namespaces."""
        for name, proc in self._inits.items():
            pid = self._init_pids.get(name)
            for target in (pid, proc.pid):
                if target:
                    try:
                        os.kill(target, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                log.warning("bed host %s: its unshare did not exit", name)
        self._inits.clear()
        self._init_pids.clear()
        for namespace in [h.namespace for h in self.hosts.values()] + [self.hub]:
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, check=False)

    def __enter__(self) -> NetBed:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()

    def _find_init(self, name: str, deadline: float) -> int:
        """The pid (as this namespace sees it) of the host's PID 1: unshare's child, once it
        has become `sleep`, i.e. after the host name and /etc/hosts are in place."""
        unshare_pid = self._inits[name].pid
        for _ in range(10_000):
            for child in child_pids(unshare_pid):
                for grandchild in [child, *child_pids(child)]:
                    if proc_cmdline(grandchild).startswith(b"sleep"):
                        return grandchild
            if self._inits[name].poll() is not None:
                raise NetBedError(
                    f"bed host {name}: its init exited ({self._inits[name].returncode})"
                )
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        raise NetBedError(f"bed host {name}: no init process after the deadline")


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise NetBedError(f"{' '.join(command)}: {done.stderr.strip() or done.returncode}")
