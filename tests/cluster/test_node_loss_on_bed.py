"""A whole node lost while it runs the driver, on a YARN of two NodeManagers across hosts of the
bed: every process of the driver's node ends at once (its host's init is killed), the
ResourceManager declares the node lost and starts the application's next attempt on the
other node, and that attempt takes the lease of the attempt before it at once (same
application, an earlier attempt: YARN ended it) instead of being refused while the lease
looks fresh and burning the restart budget. The lease's ttl is long on purpose (120 s): a
driver that had to wait for it to expire would be refused (exit 3) attempt after attempt.
The output, read `read_committed` on the Kafka host: 0 duplicates, 0 missing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.examples.access_events import AccessEvent, generate_events
from airflow_provider_kafkaspark.examples.ip_count import (
    expected_counts,
    job_spec_dict,
    sink_windows,
)
from airflow_provider_kafkaspark.spark.local_session import spark_jars_option
from kafkaspark_devstack.netbed import NetBed
from tests.cluster.bed_stack import BUCKET, KAFKASPARK, BedStack, wait

HOSTS = ["s3", "kafka", "rm", "node1", "node2", "submit"]
NODES = ["node1", "node2"]


def test_a_lost_node_s_driver_restarts_on_the_other_node(tmp_path: Path) -> None:
    with NetBed(tmp_path / "bed", HOSTS) as bed:
        stack = BedStack(bed)
        on = stack.on
        aws = stack.start_s3("s3")
        bootstrap = stack.start_kafka("kafka")
        stack.create_topics("kafka", 3, "loss_source", "loss_sink")
        stack.start_yarn("rm", NODES, ["submit"], tmp_path / "bed" / "opt")
        submit_env = {
            **aws,
            **stack.client_env["submit"],
            "AIRFLOW_CONN_SPARK_YARN": json.dumps(stack.spark_connection),
        }
        events = list(generate_events(4_000, seed=71))
        stack.produce("submit", "loss_source", events)
        checkpoint = f"s3://{BUCKET}/loss/checkpoint"
        spec = job_spec_dict(
            bootstrap_servers=bootstrap,
            checkpoint=checkpoint,
            job_name="node_loss",
            source_topic="loss_source",
            sink_topic="loss_sink",
            max_offsets_per_trigger=400,
        )
        # One executor, so that the surviving node has room for the next attempt's driver
        # and executor whichever node the first ones ran on.
        spec["spark_conf"] = {
            "spark.sql.shuffle.partitions": "2",
            "spark.executor.instances": "1",
        }
        spec["lease_ttl_s"] = 120
        spec_file = bed.folder("submit") / "spec.json"
        spec_file.write_text(json.dumps(spec))
        submit = [KAFKASPARK, "job", "submit", str(spec_file), "--spark-conn-id", "spark_yarn"]
        submit += ["--jars", spark_jars_option(s3a=True), "--max-restarts", "1", "--json"]
        submitted = json.loads(on("submit", submit, env=submit_env))
        ref_text = json.dumps(submitted["job_ref"])

        def status() -> dict[str, Any]:
            argv = [KAFKASPARK, "job", "status", ref_text, "--json"]
            return dict(json.loads(on("submit", argv, env=aws)))

        def committed() -> int:
            return sum(stack.checkpoint_offsets("submit", checkpoint, "loss_source").values())

        first = wait("a first committed batch", lambda: status()["lease"], 400)
        lost = next(node for node in NODES if f" {node} pid" in first)
        survivor = next(node for node in NODES if node != lost)
        before = wait("a batch committed", committed, 120, pause_s=1)

        killed_at = time.monotonic()
        bed.kill_host(lost)

        def on_survivor() -> bool:
            lease = status()["lease"] or ""
            return f" {survivor} pid" in lease and committed() > before

        wait("a batch committed by the next attempt on the other node", on_survivor, 400, 1)
        recovered_s = time.monotonic() - killed_at
        seen = status()
        print(f"node loss: next committed batch on {survivor} {recovered_s:.0f}s after the kill")
        assert seen["attempts"] == 2, seen
        assert seen["state"] == "RUNNING", seen

        flush_ms = max(e.event_time_ms for e in events) + 60_000
        stack.produce("submit", "loss_source", [AccessEvent("255.255.255.255", flush_ms, "/", 200)])
        wait("the source read to its end", lambda: committed() == len(events) + 1, 400)
        stop = [KAFKASPARK, "job", "stop", ref_text, "--json"]
        stopped = json.loads(on("submit", stop, timeout=300, env=aws))
        assert "clean" in stopped["stopped"], stopped
        assert status()["attempts"] == 2

        counts, duplicates = sink_windows(stack.read("kafka", "loss_sink", 3))
        assert duplicates == 0
        assert counts == expected_counts(events, closed_before_ms=flush_ms - 10_000)
