"""The local cluster's layout and broker settings, without starting a JVM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.errors import BrokerStartError
from kafkaspark_devstack.kafka import STATE_FILE, LocalKafkaCluster


def test_three_nodes_get_a_shared_quorum_and_replicated_internal_topics(tmp_path: Path) -> None:
    cluster = LocalKafkaCluster(tmp_path, brokers=3, port=19092)
    assert cluster.bootstrap_servers == "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"
    config = cluster._node_config(cluster.node(2))
    assert config["node.id"] == "2"
    assert config["controller.quorum.voters"] == (
        "1@127.0.0.1:19192,2@127.0.0.1:19193,3@127.0.0.1:19194"
    )
    assert config["listeners"] == "PLAINTEXT://127.0.0.1:19093,CONTROLLER://127.0.0.1:19193"
    assert config["offsets.topic.replication.factor"] == "3"
    assert config["transaction.state.log.min.isr"] == "2"
    assert config["log.dirs"] == str(tmp_path / "node-2" / "data")


def test_single_node_settings_fit_one_broker(tmp_path: Path) -> None:
    cluster = LocalKafkaCluster(tmp_path, broker_config={"log.retention.ms": "1000"})
    config = cluster._node_config(cluster.node(1))
    assert config["offsets.topic.replication.factor"] == "1"
    assert config["transaction.state.log.min.isr"] == "1"
    assert config["log.retention.ms"] == "1000"


def test_free_ports_are_distinct(tmp_path: Path) -> None:
    cluster = LocalKafkaCluster(tmp_path, brokers=3)
    ports = [p for n in cluster.nodes for p in (n.port, n.controller_port)]
    assert len(set(ports)) == 6


def test_layout_survives_in_cluster_json(tmp_path: Path) -> None:
    first = LocalKafkaCluster(tmp_path, brokers=2, broker_config={"a": "b"})
    first._save_state()
    raw = json.loads((tmp_path / STATE_FILE).read_text())
    assert [n["node_id"] for n in raw["nodes"]] == [1, 2]
    again = LocalKafkaCluster.attach(tmp_path)
    assert again.bootstrap_servers == first.bootstrap_servers
    assert again.status()["cluster_id"] == first.status()["cluster_id"]
    assert again._state.broker_config == {"a": "b"}
    assert [n["running"] for n in again.status()["nodes"]] == [False, False]


def test_attach_to_nothing_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(BrokerStartError, match=str(tmp_path / STATE_FILE)):
        LocalKafkaCluster.attach(tmp_path)


def test_unknown_node_and_bad_size(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="no node 4"):
        LocalKafkaCluster(tmp_path).node(4)
    with pytest.raises(ValueError, match="brokers must be 1 or more"):
        LocalKafkaCluster(tmp_path, brokers=0)


def test_cluster_ids_never_look_like_a_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    import uuid

    from kafkaspark_devstack import kafka

    # The first UUID encodes to an id starting with '-'; the launcher must draw again.
    draws = iter([uuid.UUID(bytes=b"\xfb" + bytes(15)), uuid.UUID(int=7)])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(draws))
    cluster_id = kafka._new_cluster_id()
    assert not cluster_id.startswith("-") and len(cluster_id) == 22
