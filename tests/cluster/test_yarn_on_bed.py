"""The example job on YARN across hosts of the bed (network, PID and host-name namespaces):
S3, Kafka, the ResourceManager and a NodeManager each on a host of their own, the submit from
a fifth host through `kafkaspark job submit` (the operators' flow), the driver's container
killed on its node (YARN restarts it), and the stop from a sixth host that shares nothing
with the submit but the job reference's text. Every server binds its host's bed address, so
a loopback address, a pid or a path of one host that leaked into another would fail here.
The output is read `read_committed` on the Kafka host: 0 duplicates, 0 missing."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.examples.access_events import generate_events
from airflow_provider_kafkaspark.examples.ip_count import (
    expected_counts,
    job_spec_dict,
    sink_windows,
)
from airflow_provider_kafkaspark.local.netbed import NetBed
from airflow_provider_kafkaspark.local.s3 import LocalS3Server
from airflow_provider_kafkaspark.local.spark import spark_jars_option

HOSTS = ["s3", "kafka", "rm", "node1", "submit", "stopper"]
BUCKET = "bed"
BIN = Path(sys.executable).parent
KAFKASPARK = str(BIN / "kafkaspark")

PRODUCE = """
import json, sys
from airflow_provider_kafkaspark.examples.access_events import AccessEvent, produce_events
rows = json.load(open(sys.argv[2]))
produce_events(sys.argv[1], "bed_source", [AccessEvent(*r) for r in rows])
"""
TOPICS = """
import sys
from confluent_kafka.admin import AdminClient, NewTopic
admin = AdminClient({"bootstrap.servers": sys.argv[1]})
for f in admin.create_topics([NewTopic(t, 3, 1) for t in ("bed_source", "bed_sink")]).values():
    f.result(60)
"""
READ = """
import json, sys
from tests.integration.kafka_util import read_all_values
print(json.dumps(read_all_values(sys.argv[1], "bed_sink", 3)))
"""


def wait(what: str, probe: Callable[[], Any], timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        seen = probe()
        if seen:
            return seen
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout_s:g}s waiting for {what}")
        time.sleep(2)


def test_the_job_on_yarn_across_hosts(tmp_path: Path) -> None:
    bed = NetBed(tmp_path / "bed", HOSTS)
    with bed:
        addr = {h: bed.address(h) for h in HOSTS}
        base = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AIRFLOW_"))},
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        }

        def on(
            host: str, argv: list[str], env: dict[str, str] | None = None, timeout: float = 180
        ) -> str:
            extra = {"KAFKASPARK_LOCAL_HOST": addr[host], "AIRFLOW_HOME": str(bed.folder(host))}
            here = str(bed.folder(host))
            full = {**base, **extra, **(env or {})}
            done = bed.run(host, argv, cwd=here, env=full, timeout=timeout)
            assert done.returncode == 0, f"{host}: {' '.join(argv)}\n{done.stdout}\n{done.stderr}"
            return done.stdout

        # The store and the broker, each on its own host.
        s3_dir = bed.folder("s3") / "server"
        on("s3", [KAFKASPARK, "local", "s3", "start", "--dir", str(s3_dir), "--bucket", BUCKET])
        # What an operator hands out: the store's endpoint and keys (read here, never by a host
        # from another host's folder).
        aws = LocalS3Server.attach(s3_dir).aws_environment()
        assert addr["s3"] in aws["AWS_ENDPOINT_URL"]
        on("kafka", [KAFKASPARK, "local", "kafka", "start", "--dir", str(bed.folder("kafka"))])
        bootstrap = f"{addr['kafka']}:9092"
        on("kafka", [sys.executable, "-c", TOPICS, bootstrap])

        # YARN: the ResourceManager, then a NodeManager that stages from S3.
        staging = f"s3a://{BUCKET}/staging"
        yarn = [KAFKASPARK, "local", "yarn", "start", "--staging-dir", staging]
        # The containers' Python, installed at one path on every node (as /usr/bin/python3).
        yarn += ["--node-python", str(tmp_path / "bed" / "opt" / "node-python")]
        on("rm", [*yarn, "--role", "resourcemanager", "--dir", str(bed.folder("rm"))])
        node = [*yarn, "--role", "nodemanager", "--resource-manager", addr["rm"]]
        on("node1", [*node, "--dir", str(bed.folder("node1"))], env=aws)
        client = bed.folder("submit") / "yarn"
        client_role = [*yarn, "--role", "client", "--resource-manager", addr["rm"]]
        on("submit", [*client_role, "--dir", str(client)], env=aws)
        conf = str(client / "conf" / "client")
        spark_conn = {
            "conn_type": "spark",
            "host": "yarn",
            "extra": {
                "deploy-mode": "cluster",
                "yarn_resourcemanager_webapp_address": f"http://{addr['rm']}:8088",
            },
        }
        submit_env = {
            **aws,
            "HADOOP_CONF_DIR": conf,
            "YARN_CONF_DIR": conf,
            "SPARK_CONF_DIR": conf,
            "SPARK_DIST_CLASSPATH": spark_jars_option(s3a=True).replace(",", os.pathsep),
            "AIRFLOW_CONN_SPARK_YARN": json.dumps(spark_conn),
        }

        events = list(generate_events(4_000, seed=53))
        rows = bed.folder("submit") / "events.json"
        rows.write_text(json.dumps([[e.ip, e.event_time_ms, e.path, e.status] for e in events]))
        on("submit", [sys.executable, "-c", PRODUCE, bootstrap, str(rows)])
        checkpoint = f"s3://{BUCKET}/job/checkpoint"
        spec = job_spec_dict(
            bootstrap_servers=bootstrap,
            checkpoint=checkpoint,
            job_name="bed_ip_count",
            source_topic="bed_source",
            sink_topic="bed_sink",
            max_offsets_per_trigger=500,
        )
        spec["spark_conf"] = {"spark.sql.shuffle.partitions": "2"}
        spec["lease_ttl_s"] = 20
        spec_file = bed.folder("submit") / "spec.json"
        spec_file.write_text(json.dumps(spec))
        submitted = json.loads(
            on(
                "submit",
                [
                    KAFKASPARK,
                    "job",
                    "submit",
                    str(spec_file),
                    "--spark-conn-id",
                    "spark_yarn",
                    "--jars",
                    spark_jars_option(s3a=True),
                    "--json",
                ],
                env=submit_env,
            )
        )
        ref_text = json.dumps(submitted["job_ref"])
        assert submitted["job_ref"]["resource_manager"] == f"http://{addr['rm']}:8088"

        def status(host: str) -> dict[str, Any]:
            return dict(
                json.loads(on(host, [KAFKASPARK, "job", "status", ref_text, "--json"], env=aws))
            )

        first = wait("a first committed batch", lambda: status("stopper")["lease"], 400)
        assert "node1" in first  # the driver runs on the node, under the node's host name

        # Kill the driver's container on its node: its pid exists only in the node's PID space.
        found = on("node1", ["pgrep", "-f", "yarn.ApplicationMaster"]).split()
        assert len(found) >= 1 and all(int(p) < 10_000 for p in found)
        on("node1", ["kill", "-9", *found])
        wait("YARN's second attempt", lambda: status("stopper").get("attempts", 0) >= 2, 300)

        flush_ms = max(e.event_time_ms for e in events) + 60_000
        rows.write_text(json.dumps([["255.255.255.255", flush_ms, "/", 200]]))
        on("submit", [sys.executable, "-c", PRODUCE, bootstrap, str(rows)])
        inspect = [KAFKASPARK, "checkpoint", "inspect", checkpoint, "--json"]

        def caught_up() -> bool:
            committed = json.loads(on("stopper", inspect, env=aws))["committed_offsets"]
            return bool(sum(committed.get("bed_source", {}).values()) == len(events) + 1)

        wait("the source read to its end", caught_up, 400)
        stopped = json.loads(
            on(
                "stopper",
                [
                    KAFKASPARK,
                    "job",
                    "stop",
                    ref_text,
                    "--savepoint-root",
                    f"s3://{BUCKET}/job/savepoints",
                    "--json",
                ],
                timeout=300,
                env=aws,
            )
        )
        assert "clean" in stopped["stopped"] and stopped["savepoint_id"]
        assert status("stopper")["state"] == "FINISHED"

        values = json.loads(on("kafka", [sys.executable, "-c", READ, bootstrap], timeout=120))
        counts, duplicates = sink_windows(values)
        assert duplicates == 0
        assert counts == expected_counts(events, closed_before_ms=flush_ms - 10_000)
