"""A driver started without a jar its query needs ends for good (exit 4) with a stopped report
naming what Spark did not find and the artifact to add; its supervisor does not restart it.
Real drivers under the local supervisor, a real broker, and a real S3 server for state."""

from __future__ import annotations

from pathlib import Path

from airflow_provider_kafkaspark.backends.local_driver import start_local_job
from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.spark.jars import s3a_jars, spark_connector_jars
from airflow_provider_kafkaspark.spark.local_session import check_pyspark_version
from airflow_provider_kafkaspark.versions import spark_line
from kafkaspark_devstack.drivers import read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, produce_numbered


def spec_with_jars(bootstrap: str, topic: str, base: str, name: str, jars: list[Path]) -> JobSpec:
    return JobSpec.from_dict(
        {
            "job_name": name,
            "source": {"bootstrap_servers": bootstrap, "subscribe": [topic]},
            "sql": "SELECT CAST(value AS STRING) AS value FROM source",
            "sink": {"kind": "parquet", "path": f"{base}/out"},
            "checkpoint_location": f"{base}/checkpoint",
            "trigger_interval": "1 second",
            # The job names its own jars: none are resolved for it.
            "spark_conf": {"spark.jars": ",".join(str(j) for j in jars)},
        }
    )


def run_to_the_end(spec: JobSpec, workdir: Path) -> str:
    """Starts the job under a supervisor with restarts to spare; returns its stopped report's
    message once it ended with exit 4 after one attempt."""
    handle = start_local_job(
        spec, workdir, restart_policy=RestartPolicy(max_restarts=3, backoff_s=1)
    )
    code = wait_exit(handle, 240)
    assert code == 4, read_log(handle, 200)
    control = ControlFolder(spec.checkpoint_location)
    stopped = control.read_stopped()
    assert stopped is not None and stopped.reason == "bad job" and stopped.exit_code == 4
    supervisor = control.read_supervisor()
    assert supervisor is not None and supervisor.attempt == 1 and supervisor.ended, supervisor
    assert supervisor.last_exit == 4
    return stopped.message


def test_state_on_s3_without_spark_hadoop_cloud_is_a_bad_job(
    kafka_cluster: LocalKafkaCluster, s3_url: str, tmp_path: Path
) -> None:
    """The jars the README listed for S3 before spark-hadoop-cloud was added to it: the
    query failed at start on the checkpoint manager's class, exit 1, and was restarted."""
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, "missing_jar_s3", 1)
    produce_numbered(bootstrap, "missing_jar_s3", 10)
    version = check_pyspark_version()
    jars = [
        *spark_connector_jars(spark_version=version),
        *(j for j in s3a_jars(spark_version=version) if "spark-hadoop-cloud" not in j.name),
    ]
    spec = spec_with_jars(bootstrap, "missing_jar_s3", s3_url, "missing-jar-s3", jars)
    message = run_to_the_end(spec, tmp_path / "drivers")
    cloud = spark_line(version).s3a_artifacts()[-1]
    assert "spark-hadoop-cloud" in cloud and cloud in message
    assert "AbortableStreamBasedCheckpointFileManager" in message


def test_no_kafka_connector_is_a_bad_job_naming_it(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, "missing_jar_kafka", 1)
    version = check_pyspark_version()
    # Every connector jar but Spark's Kafka source itself.
    jars = [j for j in spark_connector_jars(spark_version=version) if "sql-kafka" not in j.name]
    spec = spec_with_jars(bootstrap, "missing_jar_kafka", str(tmp_path), "missing-jar-kafka", jars)
    message = run_to_the_end(spec, tmp_path / "drivers")
    assert "data source 'kafka' not found" in message
    assert spark_line(version).connector_artifacts()[0] in message
