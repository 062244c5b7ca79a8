"""The `kafkaspark` CLI over a real checkpoint: tables, --json, and exit codes."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.cli_util import cli
from tests.integration.spark_checkpoints import MadeCheckpoint


def test_inspect_table_and_json(made_checkpoints: dict[str, MadeCheckpoint]) -> None:
    made = made_checkpoints["stateful"]
    human = cli("checkpoint", "inspect", str(made.path))
    assert human.returncode == 0, human.stderr
    assert "TOPIC" in human.stdout and made.topic in human.stdout
    machine = cli("checkpoint", "inspect", str(made.path), "--json", "--verify")
    assert machine.returncode == 0, machine.stderr
    result = json.loads(machine.stdout)
    assert result["problems"] == []
    assert sum(result["committed_offsets"][made.topic].values()) == made.records
    assert result["state"]["operators"]["0"]["partitions"] == 2


def test_savepoint_lifecycle_through_the_cli(
    made_checkpoints: dict[str, MadeCheckpoint], tmp_path: Path
) -> None:
    root = str(tmp_path / "sp")
    made = made_checkpoints["stateless"]
    created = cli("savepoint", "--root", root, "--json", "create", str(made.path), "--job", "j")
    assert created.returncode == 0, created.stderr
    sid = json.loads(created.stdout)["savepoint_id"]

    listed = json.loads(cli("savepoint", "--root", root, "--json", "list").stdout)
    assert [s["savepoint_id"] for s in listed] == [sid]
    assert "SAVEPOINT_ID" in cli("savepoint", "--root", root, "list").stdout
    assert cli("savepoint", "--root", root, "verify", "latest", "--job", "j").returncode == 0

    restored = cli(
        "savepoint",
        "--root",
        root,
        "--json",
        "restore",
        sid,
        str(tmp_path / "r"),
        "--mode",
        "offsets",
    )
    assert restored.returncode == 0, restored.stderr
    shown = json.loads(cli("savepoint", "--root", root, "--json", "show", sid).stdout)
    assert sum(shown["offsets"][made.topic].values()) == made.records
    assert json.loads(json.loads(restored.stdout)["starting_offsets"]) == shown["offsets"]

    # A corrupted savepoint: verify finds it (exit 3), restore refuses (exit 2).
    shutil.copy(
        tmp_path / "sp" / sid / "checkpoint" / "metadata",
        tmp_path / "sp" / sid / "checkpoint" / "commits" / "0",
    )
    verify = cli("savepoint", "--root", root, "verify", sid)
    assert verify.returncode == 3 and "checksum" in verify.stdout
    refused = cli("savepoint", "--root", root, "restore", sid, str(tmp_path / "r2"))
    assert refused.returncode == 2 and "failed verification" in refused.stderr
    assert not (tmp_path / "r2").exists()


def test_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    proc = cli("checkpoint", "inspect", str(tmp_path / "nothing"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no checkpoint" in proc.stderr
    bad_id = cli("savepoint", "--root", str(tmp_path), "show", "../etc")
    assert bad_id.returncode == 2 and "bad savepoint id" in bad_id.stderr


def test_probe_bootstrap_names_the_dead_entry(kafka_cluster: LocalKafkaCluster) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"  # closed again before the probe
    servers = f"{kafka_cluster.bootstrap_servers},{dead}"
    proc = cli(
        "kafka", "probe-bootstrap", "--bootstrap-servers", servers, "--timeout", "3", "--json"
    )
    assert proc.returncode == 3, proc.stderr
    report = json.loads(proc.stdout)
    assert report["dead"] == [dead]
    assert report["healthy"] is True
    human = cli("kafka", "probe-bootstrap", "--bootstrap-servers", kafka_cluster.bootstrap_servers)
    assert human.returncode == 0 and "OK" in human.stdout


def test_reconcile_cli_on_a_caught_up_checkpoint(
    kafka_cluster: LocalKafkaCluster, made_checkpoints: dict[str, MadeCheckpoint], tmp_path: Path
) -> None:
    made = made_checkpoints["stateful"]
    secret_file = tmp_path / "client.properties"
    secret_file.write_text("# comment\nclient.id = kafkaspark-cli-test\n")
    proc = cli(
        "reconcile",
        str(made.path),
        "--bootstrap-servers",
        kafka_cluster.bootstrap_servers,
        "--kafka-config-file",
        str(secret_file),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["findings"] == []
    assert plan["lag"]["total_records"] == 0
    bad = cli(
        "reconcile",
        str(made.path),
        "--bootstrap-servers",
        "x:1",
        "--kafka-config-file",
        str(tmp_path / "missing.properties"),
    )
    assert bad.returncode == 2 and "missing.properties" in bad.stderr
