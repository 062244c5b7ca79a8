"""A job's code reaches its driver with the job, not through the submit host's path: the
`python_path` folder is renamed the moment the submit returns, before the driver has even
built its Spark session, and the driver still imports the transformation (its executors a
Python UDF of it) from what was shipped, and commits batches."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from airflow_provider_kafkaspark.core.spec.job_code import check_code_visible, resolve_python_path
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from kafkaspark_devstack.drivers import driver_ref, kill_driver, submit_local
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.integration.runtime_util import committed_batches, wait_until

# A Python UDF: Spark pickles it by reference to this module, so the executors' Python
# workers must import it too, not only the driver.
JOB_CODE = """
from pyspark.sql import functions as F
from pyspark.sql.types import StringType


@F.udf(StringType())
def tag(value):
    return "shipped:" + value


def transform(source):
    return source.select(tag(F.col("value").cast("string")).alias("value"))
"""


def test_the_driver_runs_code_whose_submit_host_folder_is_gone(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, "shipped_code", 1)
    produce_numbered(bootstrap, "shipped_code", 30)
    dags = tmp_path / "dags"
    (dags / "jobs" / "shipped_pkg").mkdir(parents=True)
    (dags / "jobs" / "shipped_pkg" / "__init__.py").write_text("")
    (dags / "jobs" / "shipped_pkg" / "job.py").write_text(JOB_CODE)
    raw = {
        "job_name": "shipped-code",
        "source": {
            "bootstrap_servers": bootstrap,
            "subscribe": ["shipped_code"],
            "max_offsets_per_trigger": 10,
        },
        "transformation": "shipped_pkg.job:transform",
        "python_path": ["jobs"],  # relative to the DAG folder, as a DAG author writes it
        "sink": {"kind": "parquet", "path": str(tmp_path / "out")},
        "checkpoint_location": str(tmp_path / "checkpoint"),
        "trigger_interval": "1 second",
        "lease_ttl_s": 30,
    }
    spec = resolve_python_path(JobSpec.from_dict(raw), str(dags))
    check_code_visible(spec)  # the submit's own check still reads the host's folder
    handle = submit_local(spec, str(tmp_path / "drivers"), master="local[2]", restart_policy=None)
    (dags / "jobs").rename(dags / "jobs-moved")  # nothing of the submit host's path is left
    driver = driver_ref(handle)
    try:
        wait_until(
            driver, "3 committed batches", lambda: committed_batches(spec.checkpoint_location) >= 2
        )
    finally:
        kill_driver(driver)
    # What the driver read: the shipped file's name, not the submit host's path.
    shipped = json.loads(Path(driver.spec_file).read_text())["python_path"]
    assert shipped == ["python_path_0_jobs.zip"]
    values = pq.read_table(tmp_path / "out").column("value").to_pylist()
    assert values and all(v.startswith("shipped:") for v in values)
