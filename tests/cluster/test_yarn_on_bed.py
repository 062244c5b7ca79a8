"""The example job on YARN across hosts of the bed (network, PID and host-name namespaces):
S3, Kafka, the ResourceManager and a NodeManager each on a host of their own, the submit from
a fifth host through `kafkaspark job submit` (the operators' flow), the driver's container
killed on its node (YARN restarts it), and the stop from a sixth host that shares nothing
with the submit but the job reference's text. Every server binds its host's bed address, so
a loopback address, a pid or a path of one host that leaked into another would fail here.
The output is read `read_committed` on the Kafka host: 0 duplicates, 0 missing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.examples.access_events import AccessEvent, generate_events
from airflow_provider_kafkaspark.examples.ip_count import (
    expected_counts,
    job_spec_dict,
    sink_windows,
)
from airflow_provider_kafkaspark.spark.local_session import spark_jars_option
from kafkaspark_devstack.netbed import NetBed
from tests.cluster.bed_stack import BUCKET, KAFKASPARK, BedStack, wait

HOSTS = ["s3", "kafka", "rm", "node1", "submit", "stopper"]


@pytest.mark.extended(
    covered_by="test_airflow_on_bed (YARN across hosts), tests/faults (`kafkaspark job`)"
)
def test_the_job_on_yarn_across_hosts(tmp_path: Path) -> None:
    with NetBed(tmp_path / "bed", HOSTS) as bed:
        stack = BedStack(bed)
        on = stack.on
        aws = stack.start_s3("s3")
        bootstrap = stack.start_kafka("kafka")
        stack.create_topics("kafka", 3, "bed_source", "bed_sink")
        stack.start_yarn("rm", ["node1"], ["submit"], tmp_path / "bed" / "opt")
        submit_env = {
            **aws,
            **stack.client_env["submit"],
            "AIRFLOW_CONN_SPARK_YARN": json.dumps(stack.spark_connection),
        }

        events = list(generate_events(4_000, seed=53))
        stack.produce("submit", "bed_source", events)
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
        assert submitted["job_ref"]["resource_manager"] == f"http://{stack.addr['rm']}:8088"

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
        stack.produce("submit", "bed_source", [AccessEvent("255.255.255.255", flush_ms, "/", 200)])

        def caught_up() -> bool:
            committed = stack.checkpoint_offsets("stopper", checkpoint, "bed_source")
            return sum(committed.values()) == len(events) + 1

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

        counts, duplicates = sink_windows(stack.read("kafka", "bed_sink", 3))
        assert duplicates == 0
        assert counts == expected_counts(events, closed_before_ms=flush_ms - 10_000)
