"""The faults themselves, on the bed, before any scenario relies on them: a cut host reaches
nothing of its peer and everything again once healed, a paused process is stopped until
resumed, a skewed clock reads off, and nothing is left after."""

from __future__ import annotations

import sys
import time

from kafkaspark_devstack.faults import Faults, clock_env
from tests.cluster.bed_stack import BedStack

_CONNECT = """
import socket, sys, time
t = time.monotonic()
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3])).close()
    print("ok", round(time.monotonic() - t, 3))
except OSError as exc:
    print("failed", type(exc).__name__)
"""


def connect(stack: BedStack, host: str, peer: str, port: int, timeout_s: float = 3) -> str:
    argv = [sys.executable, "-c", _CONNECT, stack.addr[peer], str(port), str(timeout_s)]
    return stack.on(host, argv).strip()


def test_cut_slow_pause_and_clock_each_heal(fault_bed: BedStack, faults: Faults) -> None:
    assert connect(fault_bed, "d1", "kafka", 9092).startswith("ok")
    with faults.during(faults.cut("d1", "kafka")):
        assert connect(fault_bed, "d1", "kafka", 9092) == "failed TimeoutError"
        assert connect(fault_bed, "d2", "kafka", 9092).startswith("ok")  # only d1 is cut
    assert connect(fault_bed, "d1", "kafka", 9092).startswith("ok")

    # `slow` (tc netem) is not exercised: this machine's kernel has no sch_netem ("Specified
    # qdisc kind is unknown"), and the library says so in a FaultError.

    sleeper = fault_bed.bed.popen("d2", ["sleep", "300"])
    try:
        time.sleep(0.5)
        with faults.during(faults.pause("d2", "^sleep 300")) as paused:
            states = fault_bed.on(
                "d2", ["ps", "-o", "stat=", "-p", ",".join(map(str, paused.pids))]
            )
            assert set(states.split()) == {"T"}, states
        states = fault_bed.on("d2", ["ps", "-o", "stat=", "-p", ",".join(map(str, paused.pids))])
        assert "T" not in states.split(), states
    finally:
        sleeper.kill()
        sleeper.wait(10)

    argv = [sys.executable, "-c", "import time; print(time.time())"]
    plain = float(fault_bed.on("d2", argv))
    skewed = float(fault_bed.on("d2", argv, env=clock_env(60, fault_bed.base_env["PYTHONPATH"])))
    assert 55 < skewed - plain < 70, (plain, skewed)

    faults.check_clean(["d1", "d2"])
    assert [f.kind for f in faults.history] == ["cut", "pause"]
