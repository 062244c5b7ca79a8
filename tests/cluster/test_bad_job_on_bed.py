"""A bad job is final on YARN too: its driver (exit 4, here an SQL that names a column the
source lacks, which only the driver's analysis finds) writes the stopped report, then ends
its own application through the ResourceManager, so that YARN starts no other attempt
although the submit allowed 2 restarts. Before, Spark's ApplicationMaster left a failed
non-last attempt registered as a failure and YARN ran the same bad job 3 times (then
FINISHED with final status FAILED, 78 s; now KILLED after 1 attempt, 50 s)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from airflow_provider_kafkaspark.spark.local_session import spark_jars_option
from kafkaspark_devstack.netbed import NetBed
from tests.cluster.bed_stack import BUCKET, KAFKASPARK, BedStack, wait

HOSTS = ["s3", "kafka", "rm", "node1", "submit"]
ENDED = ("FAILED", "KILLED", "FINISHED")


def test_a_bad_job_ends_its_application_after_one_attempt(tmp_path: Path) -> None:
    with NetBed(tmp_path / "bed", HOSTS) as bed:
        stack = BedStack(bed)
        on = stack.on
        aws = stack.start_s3("s3")
        bootstrap = stack.start_kafka("kafka")
        stack.create_topics("kafka", 1, "bad_source", "bad_sink")
        stack.start_yarn("rm", ["node1"], ["submit"], tmp_path / "bed" / "opt")

        checkpoint = f"s3://{BUCKET}/bad/checkpoint"
        spec = job_spec_dict(
            bootstrap_servers=bootstrap,
            checkpoint=checkpoint,
            job_name="bed_bad_job",
            source_topic="bad_source",
            sink_topic="bad_sink",
        )
        del spec["transformation"]
        spec["sql"] = "SELECT no_such_column AS value FROM source"
        spec["spark_conf"] = {"spark.executor.instances": "1"}
        spec_file = bed.folder("submit") / "spec.json"
        spec_file.write_text(json.dumps(spec))
        submit = [KAFKASPARK, "job", "submit", str(spec_file), "--spark-conn-id", "spark_yarn"]
        submit += ["--jars", spark_jars_option(s3a=True), "--max-restarts", "2", "--json"]
        env = {
            **aws,
            **stack.client_env["submit"],
            "AIRFLOW_CONN_SPARK_YARN": json.dumps(stack.spark_connection),
        }
        submitted = json.loads(on("submit", submit, env=env))
        ref_text = json.dumps(submitted["job_ref"])

        def ended() -> dict[str, Any] | None:
            shown = on("submit", [KAFKASPARK, "job", "status", ref_text, "--json"], env=aws)
            found = dict(json.loads(shown))
            return found if found["state"] in ENDED else None

        seen = wait("the application's end", ended, 240, 3)
        print(f"bad job on YARN: {seen}")
        assert seen["attempts"] == 1, seen
        assert seen["state"] == "KILLED", seen
        assert "bad job" in str(seen["diagnostics"]), seen
        assert "bad job" in seen["stopped"], seen
        assert "no_such_column" in seen["stopped"], seen
