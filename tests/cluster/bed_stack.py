"""The shared parts of the multi-host tests: commands run on a host of the bed, and the
servers every story needs (S3, Kafka, YARN), each started on a host of its own with the
project's launchers. Clients always run on a host of the bed: the test process itself has no
route to the bed's addresses."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.examples.access_events import AccessEvent
from airflow_provider_kafkaspark.spark.local_session import spark_jars_option
from kafkaspark_devstack.netbed import NetBed
from kafkaspark_devstack.s3 import LocalS3Server

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
KAFKASPARK = str(BIN / "kafkaspark")
BUCKET = "bed"

_PRODUCE = """
import json, sys
from airflow_provider_kafkaspark.examples.access_events import AccessEvent, produce_events
rows = json.load(open(sys.argv[3]))
produce_events(sys.argv[1], sys.argv[2], [AccessEvent(*r) for r in rows])
"""
_TOPICS = """
import sys
from confluent_kafka.admin import AdminClient, NewTopic
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
topics = [NewTopic(t, int(sys.argv[2]), 1) for t in sys.argv[3:]]
for f in admin.create_topics(topics).values():
    f.result(60)
"""
_READ = """
import json, sys
from tests.integration.kafka_util import read_all_values
print(json.dumps(read_all_values(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
"""


def wait(what: str, probe: Callable[[], Any], timeout_s: float, pause_s: float = 2) -> Any:
    """Until `probe()` is truthy (returned), at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    for _ in range(int(timeout_s / pause_s) + 2):
        seen = probe()
        if seen:
            return seen
        if time.monotonic() > deadline:
            break
        time.sleep(pause_s)
    raise TimeoutError(f"gave up after {timeout_s:g}s waiting for {what}")


class BedStack:
    """`BedStack(bed)`: run commands on its hosts and start the shared servers there."""

    def __init__(self, bed: NetBed) -> None:
        self.bed = bed
        self.addr = {name: bed.address(name) for name in bed.hosts}
        self.base_env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AIRFLOW"))},
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(REPO),
        }
        self.aws: dict[str, str] = {}
        self.bootstrap = ""
        self.client_env: dict[str, dict[str, str]] = {}
        self.s3_connection: dict[str, Any] = {}
        self.spark_connection: dict[str, Any] = {}

    def on(
        self, host: str, argv: list[str], env: dict[str, str] | None = None, timeout: float = 180
    ) -> str:
        """Run `argv` on `host` (its folder as working folder); its stdout, or a failure
        that shows both streams."""
        here = {"KAFKASPARK_LOCAL_HOST": self.addr[host], "AIRFLOW_HOME": str(self.home(host))}
        done = self.bed.run(
            host,
            argv,
            cwd=str(self.bed.folder(host)),
            env={**self.base_env, **here, **(env or {})},
            timeout=timeout,
        )
        assert done.returncode == 0, f"{host}: {' '.join(argv)}\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def home(self, host: str) -> Path:
        return self.bed.folder(host) / "airflow-cli"

    def python(self, host: str, script: str, *args: str, **kwargs: Any) -> str:
        return self.on(host, [sys.executable, "-c", script, *args], **kwargs)

    def start_s3(self, host: str = "s3") -> dict[str, str]:
        """The store on `host`; returns the endpoint and keys an operator hands out (read here,
        never by a host from another host's folder)."""
        folder = self.bed.folder(host) / "server"
        start = [KAFKASPARK, "local", "s3", "start", "--dir", str(folder), "--bucket", BUCKET]
        self.on(host, start)
        server = LocalS3Server.attach(folder)
        self.aws = server.aws_environment()
        assert self.addr[host] in self.aws["AWS_ENDPOINT_URL"]
        self.s3_connection = server.aws_connection()
        return self.aws

    def start_kafka(self, host: str = "kafka") -> str:
        self.on(host, [KAFKASPARK, "local", "kafka", "start", "--dir", str(self.bed.folder(host))])
        self.bootstrap = f"{self.addr[host]}:9092"
        return self.bootstrap

    def create_topics(self, host: str, partitions: int, *topics: str) -> None:
        self.python(host, _TOPICS, self.bootstrap, str(partitions), *topics)

    def produce(self, host: str, topic: str, events: list[AccessEvent]) -> None:
        rows = self.bed.folder(host) / f"events-{time.monotonic_ns()}.json"
        rows.write_text(json.dumps([[e.ip, e.event_time_ms, e.path, e.status] for e in events]))
        self.python(host, _PRODUCE, self.bootstrap, topic, str(rows))

    def read(self, host: str, topic: str, partitions: int) -> list[Any]:
        """Every committed record of `topic`, read `read_committed` on `host`."""
        out = self.python(host, _READ, self.bootstrap, topic, str(partitions), timeout=120)
        return list(json.loads(out))

    def start_yarn(self, rm: str, nodes: list[str], clients: list[str], opt: Path) -> None:
        """The ResourceManager on `rm`, a NodeManager on each of `nodes`, and the client
        configuration (spark-submit's view of the cluster) on each of `clients`, all staging
        on S3; the containers' Python goes to `opt` (one path on every node)."""
        staging = f"s3a://{BUCKET}/staging"
        yarn = [KAFKASPARK, "local", "yarn", "start", "--staging-dir", staging]
        yarn += ["--node-python", str(opt / "node-python")]
        self.on(rm, [*yarn, "--role", "resourcemanager", "--dir", str(self.bed.folder(rm))])
        joined = [*yarn, "--resource-manager", self.addr[rm]]
        for node in nodes:
            argv = [*joined, "--role", "nodemanager", "--dir", str(self.bed.folder(node))]
            self.on(node, argv, env=self.aws)
        for client in clients:
            folder = self.bed.folder(client) / "yarn"
            self.on(client, [*joined, "--role", "client", "--dir", str(folder)], env=self.aws)
            conf = str(folder / "conf" / "client")
            self.client_env[client] = {
                "HADOOP_CONF_DIR": conf,
                "YARN_CONF_DIR": conf,
                "SPARK_CONF_DIR": conf,
                "SPARK_DIST_CLASSPATH": spark_jars_option(s3a=True).replace(",", os.pathsep),
            }
        self.spark_connection = {
            "conn_type": "spark",
            "host": "yarn",
            "extra": {
                "deploy-mode": "cluster",
                "yarn_resourcemanager_webapp_address": f"http://{self.addr[rm]}:8088",
            },
        }

    def checkpoint_offsets(self, host: str, checkpoint: str, topic: str) -> dict[str, int]:
        """The checkpoint's committed offsets of `topic` per partition, read on `host`."""
        inspect = [KAFKASPARK, "checkpoint", "inspect", checkpoint, "--json"]
        committed = json.loads(self.on(host, inspect, env=self.aws))["committed_offsets"]
        return dict(committed.get(topic, {}))
