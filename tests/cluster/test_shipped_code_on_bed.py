"""A job's code reaches a YARN node that never had it: the `python_path` folder lives on a
tmpfs mounted in the submit host's own mount namespace, so the NodeManager's host (same disk,
other namespace) sees no such path. The submit ships the folder (`--py-files`), the driver on
the node imports the transformation from the shipped file, its executors a Python UDF of it,
and the job commits batches.

The connector and S3A jars (about 570 MB, given as the submit host's paths) are uploaded to
S3 by the first submit only, beside the staging folder: a second job's submit uploads none,
each application's own staging folder holds kilobytes, and the second driver runs on the
copies the first one's submit left."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.backends.staged_jars import pyspark_archives
from airflow_provider_kafkaspark.examples.access_events import generate_events
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from airflow_provider_kafkaspark.spark.local_session import spark_jars_option
from kafkaspark_devstack.netbed import NetBed
from tests.cluster.bed_stack import BUCKET, KAFKASPARK, BedStack, wait

HOSTS = ["s3", "kafka", "rm", "node1", "submit"]
MB = 1_000_000

# Bytes under the staging folder: the jars staged once, and each application's own files
# (Spark's <staging>/<user>/.sparkStaging/<application>).
_STAGED = """
import json, sys
import s3fs
fs = s3fs.S3FileSystem()
root = sys.argv[1]
def files(path):
    found = fs.du(path, total=False) if fs.exists(path) else {}
    return {name.rsplit("/", 1)[-1]: size for name, size in found.items()}
apps = {a.rsplit("/", 1)[-1]: files(a) for a in fs.glob(root + "/*/.sparkStaging/*")}
print(json.dumps({"jars": sum(files(root + "/kafkaspark-jars").values()), "apps": apps}))
"""

# The UDF is pickled by reference to this module: executors must import it as well.
JOB_CODE = """
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

from airflow_provider_kafkaspark.examples.ip_count import transform as ip_count


@F.udf(BooleanType())
def keep(value):
    return value is not None


def transform(source):
    return ip_count(source.where(keep(F.col("value"))))
"""


def test_a_python_path_folder_only_the_submit_host_has(tmp_path: Path) -> None:
    with NetBed(tmp_path / "bed", HOSTS) as bed:
        stack = BedStack(bed)
        on = stack.on
        aws = stack.start_s3("s3")
        bootstrap = stack.start_kafka("kafka")
        stack.create_topics("kafka", 2, "code_source", "code_sink")
        stack.start_yarn("rm", ["node1"], ["submit"], tmp_path / "bed" / "opt")

        private = bed.folder("submit") / "private"
        private.mkdir()
        on("submit", ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(private)])
        draft = tmp_path / "draft"
        (draft / "bed_code").mkdir(parents=True)
        (draft / "bed_code" / "__init__.py").write_text("")
        (draft / "bed_code" / "job.py").write_text(JOB_CODE)
        code = private / "jobs"
        on("submit", ["cp", "-r", str(draft), str(code)])
        shutil.rmtree(draft)
        assert not code.exists()  # this (the test's) namespace has only the empty mount point
        on("node1", ["sh", "-c", 'test ! -e "$0"', str(code)])

        stack.produce("submit", "code_source", list(generate_events(2_000, seed=71)))
        checkpoint = f"s3://{BUCKET}/code/checkpoint"
        spec = job_spec_dict(
            bootstrap_servers=bootstrap,
            checkpoint=checkpoint,
            job_name="bed_shipped_code",
            source_topic="code_source",
            sink_topic="code_sink",
            max_offsets_per_trigger=400,
        )
        spec["transformation"] = "bed_code.job:transform"
        spec["python_path"] = [str(code)]  # the submit host's absolute path
        spec["spark_conf"] = {"spark.sql.shuffle.partitions": "2"}
        spec_file = bed.folder("submit") / "spec.json"
        spec_file.write_text(json.dumps(spec))
        submit = [KAFKASPARK, "job", "submit", str(spec_file), "--spark-conn-id", "spark_yarn"]
        submit += ["--jars", spark_jars_option(s3a=True), "--json"]
        env = {
            **aws,
            **stack.client_env["submit"],
            "AIRFLOW_CONN_SPARK_YARN": json.dumps(stack.spark_connection),
        }
        submitted = json.loads(on("submit", submit, env=env))
        ref_text = json.dumps(submitted["job_ref"])
        # The jars, and pyspark's Python archives, which spark-submit ships as well.
        staged_files = f"{spark_jars_option(s3a=True)},{pyspark_archives()}".split(",")
        jar_bytes = sum(Path(p).stat().st_size for p in staged_files)
        assert submitted["jars_uploaded_bytes"] == jar_bytes > 500 * MB

        def status(ref: str = ref_text) -> dict[str, Any]:
            shown = on("submit", [KAFKASPARK, "job", "status", ref, "--json"], env=aws)
            found = dict(json.loads(shown))
            # An application that ended cannot commit any more: stop waiting.
            assert found["state"] not in ("FAILED", "KILLED", "FINISHED"), found
            return found

        def committed_at(where: str) -> int:
            inspect = [KAFKASPARK, "checkpoint", "inspect", where, "--json"]
            found = json.loads(on("submit", inspect, env=aws))
            assert found["stopped"] is None, found["stopped"]
            latest = found.get("latest_committed_batch")
            return -1 if latest is None else int(latest)

        def committed() -> int:
            return committed_at(checkpoint)

        # The checkpoint first: a bad job's stopped report says why, before YARN's attempts
        # run out (the code before shipping: 4 attempts, then FINISHED, in 93 s).
        wait("two committed batches", lambda: committed() >= 1 and status()["lease"], 300, 5)
        # The driver that committed them ran on the node without the folder.
        assert "node1" in str(status()["lease"])

        # A second job with the same jars: nothing uploaded, its driver runs on the copies.
        second_checkpoint = f"s3://{BUCKET}/code2/checkpoint"
        spec.update(job_name="bed_shipped_code_2", checkpoint_location=second_checkpoint)
        spec_file.write_text(json.dumps(spec))
        second = json.loads(on("submit", submit, env=env))
        assert second["jars_uploaded_bytes"] == 0, second
        staged = json.loads(stack.python("submit", _STAGED, f"s3://{BUCKET}/staging", env=aws))
        assert staged["jars"] == jar_bytes, staged
        for app in (submitted, second):
            assert sum(staged["apps"][app["job_ref"]["application_id"]].values()) < MB, staged
        second_ref = json.dumps(second["job_ref"])
        wait("the second job's first batch", lambda: committed_at(second_checkpoint) >= 0, 300, 5)
        assert "node1" in str(status(second_ref)["lease"])
