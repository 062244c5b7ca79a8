"""Faults between the hosts of a bed (`netbed.NetBed`), each bounded in time and always healed.

- `cut(host, peer)`: `host` neither sends to nor receives from `peer` (iptables DROP rules in
  `host`'s network namespace: packets vanish, as in a real partition, instead of the quick
  refusals a route or a closed port would give).
- `slow(host, delay_ms, loss_percent)`: `tc netem` on the host's link to the bed (needs the
  kernel's sch_netem; where it is missing, tc's refusal comes back as a FaultError).
- `pause(host, pattern)`: SIGSTOP to the host's processes whose command line matches, as a
  GC pause or a stolen VM does; `resume` sends SIGCONT.
- `clock_env(offset_s)`: the variables that start a Python process with its wall clock
  `offset_s` ahead (or behind, negative); its monotonic clock runs true, as after a host's
  clock was set wrong.
- Killing a whole host is `NetBed.kill_host`.

Each fault is healed by `heal`, by `heal_all`, at the latest by a timer at its deadline (a
test stuck in a fault leaves no host cut off for the next one), and by the bed's teardown
(its namespaces, rules and processes go with it). `check_clean` tells a test before it
starts that no fault of an earlier one is left.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kafkaspark_devstack.netbed import NetBed, NetBedError

log = logging.getLogger(__name__)

CLOCK_SKEW_PATH = Path(__file__).resolve().parent / "clock_skew"
# A fault is healed at this age at the latest, whatever the test does meanwhile.
MAX_FAULT_S = 600.0
FAULT_CHAIN = "KAFKASPARK-FAULT"


class FaultError(NetBedError):
    """A fault could not be injected or healed."""


def cut_commands(peer_address: str) -> list[list[str]]:
    """iptables commands, run in the host's network namespace, that drop every packet to and
    from `peer_address` (in a chain of their own, so healing removes exactly them)."""
    return [
        ["iptables", "-w", "-N", FAULT_CHAIN],
        ["iptables", "-w", "-I", "INPUT", "-j", FAULT_CHAIN],
        ["iptables", "-w", "-I", "OUTPUT", "-j", FAULT_CHAIN],
        ["iptables", "-w", "-A", FAULT_CHAIN, "-s", peer_address, "-j", "DROP"],
        ["iptables", "-w", "-A", FAULT_CHAIN, "-d", peer_address, "-j", "DROP"],
    ]


def uncut_commands() -> list[list[str]]:
    return [
        ["iptables", "-w", "-D", "INPUT", "-j", FAULT_CHAIN],
        ["iptables", "-w", "-D", "OUTPUT", "-j", FAULT_CHAIN],
        ["iptables", "-w", "-F", FAULT_CHAIN],
        ["iptables", "-w", "-X", FAULT_CHAIN],
    ]


def netem_command(delay_ms: int, loss_percent: float, device: str = "eth0") -> list[str]:
    if delay_ms < 0 or not 0 <= loss_percent <= 100:
        raise FaultError(f"netem: delay {delay_ms} ms and loss {loss_percent}% are not valid")
    command = ["tc", "qdisc", "replace", "dev", device, "root", "netem"]
    if delay_ms:
        command += ["delay", f"{delay_ms}ms"]
    if loss_percent:
        command += ["loss", f"{loss_percent:g}%"]
    return command


def clock_env(offset_s: float, pythonpath: str = "") -> dict[str, str]:
    """Start a Python process with these and its wall clock (`time.time()`) reads `offset_s`
    seconds off, as on a host whose clock was set wrong (`clock_skew/sitecustomize.py`); its
    monotonic clock runs true. `pythonpath`: the PYTHONPATH the process would have had.

    Every decision about a lease is taken in Python (drivers, the CLI, Airflow's tasks and
    triggers). libfaketime, which would skew a JVM too, is not used: preloaded into Python it
    stalls librdkafka's timed waits and makes `time.time()` fail in threads."""
    return {
        "PYTHONPATH": os.pathsep.join(p for p in (str(CLOCK_SKEW_PATH), pythonpath) if p),
        "KAFKASPARK_FAULT_CLOCK_OFFSET_S": f"{offset_s:g}",
    }


@dataclass
class Fault:
    kind: str
    host: str
    what: str  # for a person: "node1 cut from s3"
    started: float = field(default_factory=time.monotonic)
    pids: list[int] = field(default_factory=list)
    healed_at: float | None = None

    def describe(self) -> str:
        return f"{self.kind} on {self.host}: {self.what}"


class Faults:
    """`with Faults(bed) as faults: f = faults.cut("node1", "s3"); ...; faults.heal(f)`"""

    def __init__(self, bed: NetBed, max_fault_s: float = MAX_FAULT_S) -> None:
        self.bed = bed
        self.max_fault_s = max_fault_s
        self.active: list[Fault] = []
        self.history: list[Fault] = []
        self._lock = threading.Lock()
        self._timers: dict[int, threading.Timer] = {}

    # -- injecting ---------------------------------------------------------------------------

    def cut(self, host: str, peer: str) -> Fault:
        fault = Fault("cut", host, f"{host} cut from {peer}")
        for command in cut_commands(self.bed.address(peer)):
            self._run(host, command, fault)
        return self._started(fault)

    def slow(self, host: str, delay_ms: int, loss_percent: float = 0) -> Fault:
        fault = Fault("netem", host, f"{host}'s link: +{delay_ms} ms, {loss_percent:g}% loss")
        self._run(host, netem_command(delay_ms, loss_percent), fault)
        return self._started(fault)

    def pause(self, host: str, pattern: str) -> Fault:
        """SIGSTOP every process of `host` whose command line matches `pattern` (pgrep -f)."""
        found = self.bed.run(host, ["pgrep", "-f", pattern], timeout=10).stdout.split()
        if not found:
            raise FaultError(f"pause on {host}: no process matches {pattern!r}")
        fault = Fault("pause", host, f"{len(found)} processes matching {pattern!r} stopped")
        fault.pids = [int(p) for p in found]
        self._signal(host, "STOP", fault.pids)
        return self._started(fault)

    @contextlib.contextmanager
    def during(self, fault: Fault) -> Iterator[Fault]:
        """Heal `fault` when the block ends; an error inside names the fault it happened in."""
        try:
            yield fault
        except BaseException as exc:
            exc.add_note(f"while this fault was active: {fault.describe()}")
            raise
        finally:
            self.heal(fault)

    # -- healing -----------------------------------------------------------------------------

    def heal(self, fault: Fault) -> None:
        with self._lock:
            if fault not in self.active:
                return
            self.active.remove(fault)
            timer = self._timers.pop(id(fault), None)
        if timer is not None:
            timer.cancel()
        if fault.kind == "cut":
            for command in uncut_commands():
                self.bed.run(fault.host, command, timeout=10)
        elif fault.kind == "netem":
            self.bed.run(fault.host, ["tc", "qdisc", "del", "dev", "eth0", "root"], timeout=10)
        elif fault.kind == "pause":
            self._signal(fault.host, "CONT", fault.pids, check=False)
        fault.healed_at = time.monotonic()
        log.info("healed after %.1fs: %s", fault.healed_at - fault.started, fault.describe())

    def heal_all(self) -> None:
        for fault in list(reversed(self.active)):
            try:
                self.heal(fault)
            except Exception:  # heal the others; the bed's teardown does the rest
                log.exception("could not heal %s", fault.describe())

    def check_clean(self, hosts: list[str]) -> None:
        """Raise if a host still has a fault's rules, a netem queue or a stopped process."""
        left: list[str] = []
        for host in hosts:
            rules = self.bed.run(host, ["iptables", "-w", "-S"], timeout=10).stdout
            if FAULT_CHAIN in rules:
                left.append(f"{host}: iptables chain {FAULT_CHAIN}")
            qdisc = self.bed.run(host, ["tc", "qdisc", "show", "dev", "eth0"], timeout=10).stdout
            if "netem" in qdisc:
                left.append(f"{host}: netem on eth0")
            states = self.bed.run(host, ["ps", "-eo", "pid=,stat=,comm="], timeout=10).stdout
            stopped = [line.strip() for line in states.splitlines() if line.split()[1:2] == ["T"]]
            left += [f"{host}: stopped process {line}" for line in stopped]
        if left:
            raise FaultError("faults left by an earlier test: " + "; ".join(left))

    def __enter__(self) -> Faults:
        return self

    def __exit__(self, *exc: object) -> None:
        self.heal_all()

    # -- inner -------------------------------------------------------------------------------

    def _started(self, fault: Fault) -> Fault:
        timer = threading.Timer(self.max_fault_s, self._expire, args=(fault,))
        timer.daemon = True
        with self._lock:
            self.active.append(fault)
            self.history.append(fault)
            self._timers[id(fault)] = timer
        timer.start()
        log.info("injected: %s", fault.describe())
        return fault

    def _expire(self, fault: Fault) -> None:
        log.warning("healing at its deadline (%.0fs): %s", self.max_fault_s, fault.describe())
        self.heal(fault)

    def _run(self, host: str, command: list[str], fault: Fault) -> None:
        done = self.bed.run(host, command, timeout=10)
        if done.returncode != 0:
            self.heal_all()
            with contextlib.suppress(Exception):
                for undo in uncut_commands() if fault.kind == "cut" else []:
                    self.bed.run(host, undo, timeout=10)
            raise FaultError(f"{fault.describe()}: {' '.join(command)}: {done.stderr.strip()}")

    def _signal(self, host: str, name: str, pids: list[int], check: bool = True) -> None:
        done = self.bed.run(host, ["kill", f"-{name}", *map(str, pids)], timeout=10)
        if check and done.returncode != 0:
            raise FaultError(f"kill -{name} {pids} on {host}: {done.stderr.strip()}")
