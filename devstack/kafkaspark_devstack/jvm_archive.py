"""Building the class-data-sharing (AppCDS) archives that make local JVM starts faster
(`airflow_provider_kafkaspark/spark/fast_jvm.py` maps them in under `KAFKASPARK_FAST_JVM=1`).

The archives are built once by `make setup` (`kafkaspark local jars archive`) and match only
the JVM and jars they were built with: a stale one is rebuilt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from airflow_provider_kafkaspark.errors import LocalStackError
from airflow_provider_kafkaspark.spark import fast_jvm
from airflow_provider_kafkaspark.spark.fast_jvm import C1_ONLY, FAST_JVM_ENV, KINDS, Kind
from airflow_provider_kafkaspark.spark.jars import JARS_DIR_ENV, find_java
from kafkaspark_devstack.jars import default_jars_dir, kafka_classpath

_BUILD_TIMEOUT_S = 300
_MODULE = "kafkaspark_devstack.jvm_archive"


def archive_path(kind: Kind, jars_dir: Path | None = None) -> Path:
    """Next to the jar cache (given, else `$KAFKASPARK_JARS_DIR`, else the dev stack's
    default): `.cache/jvm/spark-<version>.jsa` by default."""
    root = jars_dir or Path(os.environ.get(JARS_DIR_ENV) or default_jars_dir())
    found = fast_jvm.archive_path(kind, root)
    assert found is not None  # a jar folder was given
    return found


def archive_key(kind: Kind, jars_dir: Path | None = None) -> dict[str, str]:
    """What an archive must match: the JVM that maps it and the jars it holds."""
    java = find_java()
    version = subprocess.run(
        [str(java), "-version"], capture_output=True, text=True, timeout=30, check=False
    ).stderr.strip()
    if kind == "spark":
        import pyspark

        jars = str(Path(pyspark.__file__).resolve().parent / "jars")
    else:
        jars = kafka_classpath(jars_dir)
    return {"java": str(java.resolve()), "java_version": version, "jars": jars}


def _key_file(archive: Path) -> Path:
    return archive.with_suffix(".json")


def archive_is_current(kind: Kind, jars_dir: Path | None = None) -> bool:
    archive = archive_path(kind, jars_dir)
    try:
        recorded = json.loads(_key_file(archive).read_text())
    except (OSError, ValueError):
        return False
    return archive.is_file() and recorded == archive_key(kind, jars_dir)


def build_archive(kind: Kind, jars_dir: Path | None = None, *, force: bool = False) -> Path:
    """Build one archive unless a current one is there: a JVM of that kind runs a small
    workload in a child process and writes the classes it loaded as it exits. Written under a
    temporary name and renamed, since a JVM crashes on a truncated archive."""
    archive = archive_path(kind, jars_dir)
    if not force and archive_is_current(kind, jars_dir):
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f".{archive.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    env = {**os.environ, FAST_JVM_ENV: "0"}
    if jars_dir is not None:
        env[JARS_DIR_ENV] = str(jars_dir)
    command = [sys.executable, "-m", _MODULE, "--warm-up", kind, str(partial)]
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        partial.unlink(missing_ok=True)
        raise LocalStackError(
            f"building the JVM class archive {archive} took over {_BUILD_TIMEOUT_S} s"
        ) from exc
    if done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise LocalStackError(
            f"building the JVM class archive {archive} failed (exit {done.returncode}): "
            f"{done.stderr[-2000:]}"
        )
    partial.replace(archive)
    _key_file(archive).write_text(json.dumps(archive_key(kind, jars_dir), indent=2) + "\n")
    return archive


def _warm_up_spark(dump_to: Path) -> None:
    """A batch aggregation, a parquet write, and streaming queries with a checkpoint and a
    Python foreachBatch, as a local driver runs them."""
    from airflow_provider_kafkaspark.spark.local_session import local_spark_session

    options = f"{C1_ONLY} -XX:ArchiveClassesAtExit={dump_to}"
    spark = local_spark_session(
        "kafkaspark-jvm-archive", conf={"spark.driver.extraJavaOptions": options}
    )
    with tempfile.TemporaryDirectory(prefix="kafkaspark-jvm-archive-") as work:
        base = Path(work)
        frame = spark.range(2000).selectExpr("id", "CAST(id % 7 AS STRING) AS value")
        frame.groupBy("value").count().collect()
        frame.write.parquet(str(base / "in"))
        stream = spark.readStream.schema(frame.schema).parquet(str(base / "in"))
        to_files = (
            stream.selectExpr("value")
            .writeStream.format("parquet")
            .option("path", str(base / "out"))
            .option("checkpointLocation", str(base / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        to_files.awaitTermination(120)
        batches: list[int] = []
        to_python = (
            stream.writeStream.foreachBatch(lambda _batch, batch_id: batches.append(batch_id))
            .option("checkpointLocation", str(base / "checkpoint-foreach"))
            .trigger(availableNow=True)
            .start()
        )
        to_python.awaitTermination(120)
    gateway = spark.sparkContext._gateway
    spark.stop()
    # The JVM writes the archive as it exits, and it exits when its stdin closes.
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        proc.stdin.close()
        proc.wait(timeout=_BUILD_TIMEOUT_S)


def _warm_up_kafka(dump_to: Path) -> None:
    """A one-node cluster started, given a topic and a record, and stopped (its JVM writes the
    archive on the way out)."""
    from kafkaspark_devstack.kafka import LocalKafkaCluster

    with tempfile.TemporaryDirectory(prefix="kafkaspark-jvm-archive-") as work:
        cluster = LocalKafkaCluster(
            Path(work), broker_jvm_options=[C1_ONLY, f"-XX:ArchiveClassesAtExit={dump_to}"]
        )
        with cluster:
            from confluent_kafka import Producer
            from confluent_kafka.admin import AdminClient, NewTopic

            admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            admin.create_topics([NewTopic("warm-up", 2, 1)])["warm-up"].result(60)
            producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
            producer.produce("warm-up", b"x")
            producer.flush(60)


_WARM_UPS: dict[str, Callable[[Path], None]] = {"spark": _warm_up_spark, "kafka": _warm_up_kafka}

if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--warm-up":
        _WARM_UPS[sys.argv[2]](Path(sys.argv[3]))
    else:
        for each in KINDS:
            print(f"built {build_archive(each, force='--force' in sys.argv)}")
