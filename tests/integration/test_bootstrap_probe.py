"""The bootstrap probe against real brokers."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from airflow_provider_kafkaspark.core.kafka.bootstrap_probe import ProbeStatus, probe_bootstrap
from kafkaspark_devstack.kafka import LocalKafkaCluster


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_probe_reports_a_killed_broker_and_an_unused_port(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    timeout_s = 5.0
    unused = f"127.0.0.1:{free_port()}"
    with LocalKafkaCluster(tmp_path / "three", brokers=3) as cluster:
        addresses = [cluster.node(n).address for n in (1, 2, 3)]
        config = {"bootstrap.servers": ",".join([*addresses, unused])}

        before = probe_bootstrap(config, timeout_s=timeout_s)
        assert [s.status for s in before.servers] == [ProbeStatus.OK] * 3 + [
            ProbeStatus.UNREACHABLE
        ]
        assert [s.broker_id for s in before.servers[:3]] == [1, 2, 3]
        assert before.cluster_id == cluster.status()["cluster_id"]

        cluster.kill_broker(2)
        started = time.monotonic()
        report = probe_bootstrap(config, timeout_s=timeout_s)
        elapsed = time.monotonic() - started
        assert {s.server: s.status for s in report.servers} == {
            addresses[0]: ProbeStatus.OK,
            addresses[1]: ProbeStatus.UNREACHABLE,
            addresses[2]: ProbeStatus.OK,
            unused: ProbeStatus.UNREACHABLE,
        }
        assert report.healthy
        assert report.dead == [addresses[1], unused]
        assert {addresses[0], addresses[2]} <= set(report.brokers)
        assert elapsed < 2 * timeout_s

        # The session's broker belongs to another cluster and is outvoted by the two live nodes.
        mixed = probe_bootstrap(
            {"bootstrap.servers": ",".join([*addresses, kafka_cluster.bootstrap_servers])},
            timeout_s=timeout_s,
        )
        assert mixed.status_of(kafka_cluster.bootstrap_servers).status is (
            ProbeStatus.OTHER_CLUSTER
        )
        assert mixed.cluster_id == cluster.status()["cluster_id"]


def test_probe_flags_a_server_that_accepts_but_never_answers(
    kafka_cluster: LocalKafkaCluster,
) -> None:
    timeout_s = 2.0
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        mute = f"127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        report = probe_bootstrap(
            {"bootstrap.servers": f"{mute},{kafka_cluster.bootstrap_servers}"},
            timeout_s=timeout_s,
        )
        elapsed = time.monotonic() - started
    assert report.status_of(mute).status is ProbeStatus.NO_METADATA
    assert report.status_of(kafka_cluster.bootstrap_servers).status is ProbeStatus.OK
    assert report.dead == [mute]
    assert elapsed < 2 * timeout_s
