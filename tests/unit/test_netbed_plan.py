"""The multi-host bed's plan: addresses, host names and the commands that build it, checked
without running them (tests/cluster/test_netbed.py runs them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkaspark_devstack.netbed import (
    NetBedError,
    enter_command,
    hosts_file,
    init_command,
    plan_hosts,
    up_commands,
)


def test_hosts_get_their_own_namespace_and_address() -> None:
    hosts = plan_hosts("kst1", ["airflow", "yarn"])
    assert [(h.name, h.namespace, h.address) for h in hosts] == [
        ("airflow", "kst1-airflow", "10.77.0.1"),
        ("yarn", "kst1-yarn", "10.77.0.2"),
    ]
    assert hosts_file(hosts).splitlines() == [
        "127.0.0.1 localhost",
        "10.77.0.1 airflow",
        "10.77.0.2 yarn",
    ]
    with pytest.raises(NetBedError, match="distinct"):
        plan_hosts("kst1", ["a", "a"])


def test_nothing_is_made_in_the_machine_namespace() -> None:
    hosts = plan_hosts("kst1", ["a", "b"])
    commands = up_commands("kst1-hub", hosts)
    # Every link command names a bed namespace (`ip -n NS`); only `netns add` has none.
    for command in commands:
        assert command[:3] == ["ip", "netns", "add"] or command[1:3][0] == "-n", command
    veths = [c for c in commands if "veth" in c]
    assert [c[c.index("netns") + 1] for c in veths] == ["kst1-a", "kst1-b"]
    assert all(c[2] == "kst1-hub" for c in veths)


def test_a_host_runs_in_its_own_pid_and_uts_namespaces(tmp_path: Path) -> None:
    (host,) = plan_hosts("kst1", ["kafka"])
    init = init_command(host, tmp_path / "hosts.txt")
    assert init[:4] == ["ip", "netns", "exec", "kst1-kafka"]
    assert {"--uts", "--pid", "--mount-proc", "--kill-child"} <= set(init)
    assert init[-2:] == ["kafka", str(tmp_path / "hosts.txt")]
    assert enter_command(42, ["python", "-V"], "/w") == [
        *("nsenter", "-t", "42", "-m", "-u", "-n", "-p", "--wd=/w", "--"),
        *("python", "-V"),
    ]
