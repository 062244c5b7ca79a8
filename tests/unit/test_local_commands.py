"""`kafkaspark local s3|kafka start` against a folder that holds a server already: its port
(and a cluster's size) are the folder's; a `--port` or `--brokers` that asks for others is
refused in one line, instead of starting the folder's server where it was. Nothing starts
here: the start itself is replaced (tests/integration/test_local_s3.py starts a real one)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.cli import main
from airflow_provider_kafkaspark.errors import InvalidArgumentError
from kafkaspark_devstack.commands.local import (
    DEFAULT_LOCAL_KAFKA_PORT,
    DEFAULT_LOCAL_S3_PORT,
    start_setting,
)
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import LocalS3Server


def test_a_new_folder_takes_what_is_asked_else_the_default() -> None:
    assert start_setting("--port", None, None, 8333, where="w") == 8333
    assert start_setting("--port", 9000, None, 8333, where="w") == 9000
    assert start_setting("--port", 0, None, 8333, where="w", anything=0) == 0


def test_a_kept_folder_takes_its_own_and_refuses_another() -> None:
    assert start_setting("--port", None, 8333, 8333, where="w") == 8333
    assert start_setting("--port", 8333, 8333, 8333, where="w") == 8333
    # 0 asks for any free port: the folder's is one.
    assert start_setting("--port", 0, 41234, 8333, where="w", anything=0) == 41234
    with pytest.raises(InvalidArgumentError) as refused:
        start_setting("--port", 9000, 8333, 8333, where="the local S3 server in /x (s3.json)")
    assert str(refused.value) == (
        "--port 9000: the local S3 server in /x (s3.json) has --port 8333; leave out --port "
        "to start it as it is, or give another --dir for a new one with --port 9000"
    )


@dataclass
class Started:
    s3: list[LocalS3Server] = field(default_factory=list)
    kafka: list[LocalKafkaCluster] = field(default_factory=list)


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Started:
    """The servers the CLI would start (none starts); the jar setting the CLI sets is undone."""
    monkeypatch.setenv("KAFKASPARK_JARS_DIR", str(tmp_path / "jars"))
    started = Started()

    def start_s3(self: LocalS3Server, timeout: float = 0.0) -> LocalS3Server:
        started.s3.append(self)
        return self

    def start_kafka(self: LocalKafkaCluster, timeout: float = 0.0) -> LocalKafkaCluster:
        started.kafka.append(self)
        return self

    monkeypatch.setattr(LocalS3Server, "start", start_s3)
    monkeypatch.setattr(LocalKafkaCluster, "start", start_kafka)
    return started


def test_s3_start_keeps_the_folders_port_and_refuses_another(
    tmp_path: Path, starts: Started, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "s3"
    LocalS3Server(base, port=18333).stop()  # a folder whose server ran on 18333 and stopped
    asked = ["local", "s3", "start", "--dir", str(base)]

    assert main([*asked, "--port", "19000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(base) in err and "s3.json" in err, err
    assert "has --port 18333" in err and "--port 19000" in err and "leave out --port" in err
    assert starts.s3 == []

    assert main(asked) == 0
    assert main([*asked, "--port", "18333"]) == 0
    assert [s.port for s in starts.s3] == [18333, 18333]


def test_s3_start_of_a_new_folder_takes_the_port_asked_else_8333(
    tmp_path: Path, starts: Started
) -> None:
    assert main(["local", "s3", "start", "--dir", str(tmp_path / "a")]) == 0
    assert main(["local", "s3", "start", "--dir", str(tmp_path / "b"), "--port", "19001"]) == 0
    assert [s.port for s in starts.s3] == [DEFAULT_LOCAL_S3_PORT, 19001]


def test_kafka_start_keeps_the_clusters_port_and_size_and_refuses_others(
    tmp_path: Path, starts: Started, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "kafka"
    LocalKafkaCluster(base, brokers=2, port=19092)._save_state()
    asked = ["local", "kafka", "start", "--dir", str(base)]

    assert main([*asked, "--port", "29092"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(base) in err and "cluster.json" in err, err
    assert "has --port 19092" in err and "--port 29092" in err
    assert main([*asked, "--brokers", "3"]) == 2
    err = capsys.readouterr().err
    assert "has --brokers 2" in err and "--brokers 3" in err and "leave out --brokers" in err
    assert starts.kafka == []

    assert main(asked) == 0
    assert main([*asked, "--port", "19092", "--brokers", "2"]) == 0
    servers = [c.bootstrap_servers for c in starts.kafka]
    assert servers == ["127.0.0.1:19092,127.0.0.1:19093"] * 2


def test_kafka_start_of_a_new_folder_takes_what_is_asked_else_the_defaults(
    tmp_path: Path, starts: Started
) -> None:
    assert main(["local", "kafka", "start", "--dir", str(tmp_path / "a")]) == 0
    new = ["local", "kafka", "start", "--dir", str(tmp_path / "b")]
    assert main([*new, "--port", "19192", "--brokers", "2"]) == 0
    assert [c.bootstrap_servers for c in starts.kafka] == [
        f"127.0.0.1:{DEFAULT_LOCAL_KAFKA_PORT}",
        "127.0.0.1:19192,127.0.0.1:19193",
    ]
