"""The fault library's commands and the fault tier's reading of S3's versions, without a bed
(`kafkaspark_devstack/faults.py`, `tests/faults/scenario.py`)."""

from __future__ import annotations

import pytest

from kafkaspark_devstack.faults import (
    FAULT_CHAIN,
    FaultError,
    clock_env,
    cut_commands,
    netem_command,
    uncut_commands,
)
from tests.faults.scenario import lease_history, rewritten_checkpoint_files


def test_a_cut_drops_both_directions_in_a_chain_of_its_own_and_healing_removes_it() -> None:
    cut = cut_commands("10.77.0.3")
    assert ["iptables", "-w", "-A", FAULT_CHAIN, "-s", "10.77.0.3", "-j", "DROP"] in cut
    assert ["iptables", "-w", "-A", FAULT_CHAIN, "-d", "10.77.0.3", "-j", "DROP"] in cut
    heal = uncut_commands()
    assert heal[-1] == ["iptables", "-w", "-X", FAULT_CHAIN]
    # Every jump the cut inserted is deleted.
    jumps = {tuple(c[3:]) for c in cut if c[2] == "-I"}
    assert jumps == {tuple(c[3:]) for c in heal if c[2] == "-D"}


def test_netem_and_its_bad_input() -> None:
    assert netem_command(200, 5) == [
        *"tc qdisc replace dev eth0 root netem delay 200ms loss 5%".split()
    ]
    with pytest.raises(FaultError, match="loss 101"):
        netem_command(0, 101)


def test_a_skewed_clock_goes_first_on_the_python_path() -> None:
    env = clock_env(-30, "/repo")
    assert env["KAFKASPARK_FAULT_CLOCK_OFFSET_S"] == "-30"
    first, rest = env["PYTHONPATH"].split(":", 1)
    assert first.endswith("clock_skew") and rest == "/repo"


def _lease(owner: str) -> dict[str, object]:
    return {"key": "j/checkpoint/_kafkaspark/lease.json", "deleted": False, "owner": owner}


def test_the_lease_history_from_s3_versions() -> None:
    handover = [_lease("a"), _lease("a"), _lease("b"), _lease("b")]
    assert lease_history(handover).owners == ["a", "b"]
    assert lease_history(handover).holders_at_most == 1
    # "a" wrote the lease again after "b" had taken it: two holders at once.
    back = lease_history([*handover, _lease("a")])
    assert back.returned == ["a"] and back.holders_at_most == 2
    released = {"key": "j/checkpoint/_kafkaspark/lease.json", "deleted": True}
    assert lease_history([_lease("a"), released, _lease("c")]).owners == ["a", "c"]


def test_offset_and_commit_files_written_twice() -> None:
    versions = [
        {"key": "j/checkpoint/offsets/3", "deleted": False},
        {"key": "j/checkpoint/offsets/3", "deleted": False},
        {"key": "j/checkpoint/commits/3", "deleted": False},
        {"key": "j/checkpoint/_kafkaspark/progress.json", "deleted": False},
        {"key": "j/checkpoint/_kafkaspark/progress.json", "deleted": False},
    ]
    assert rewritten_checkpoint_files(versions) == ["j/checkpoint/offsets/3"]
