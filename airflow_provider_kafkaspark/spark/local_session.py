"""SparkSessions whose driver runs in this process (local mode, or client mode against a
cluster), with the Kafka connector jars on their classpath."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_kafkaspark.errors import LocalStackError
from airflow_provider_kafkaspark.spark.fast_jvm import fast_java_options
from airflow_provider_kafkaspark.spark.jars import find_java, s3a_jars, spark_connector_jars
from airflow_provider_kafkaspark.spark.scratch import driver_scratch
from airflow_provider_kafkaspark.spark.session import is_local_master, session_defaults
from airflow_provider_kafkaspark.versions import SPARK_LINES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def check_pyspark_version() -> str:
    """pyspark's version, whose Kafka connector jars a session gets: one of the supported
    releases (`versions.SPARK_LINES`); raises naming them if not."""
    import pyspark

    found = str(pyspark.__version__)
    if found not in SPARK_LINES:
        raise LocalStackError(
            f"pyspark {found} is installed, but Kafka connector jars are known for Spark "
            f"{', '.join(sorted(SPARK_LINES))} only: run `make setup` (pyspark-client may "
            f"have overwritten pyspark)"
        )
    return found


# Spark's launcher appends it to the driver JVM's class path.
DIST_CLASSPATH_ENV = "SPARK_DIST_CLASSPATH"


def python_env(master: str, python: str | None = None) -> dict[str, str]:
    """The variables that make Spark run `python` (default: this interpreter) for the driver
    and its workers, and, for a `local[...]` master only, bind to loopback."""
    chosen = python or sys.executable
    env = {"PYSPARK_PYTHON": chosen, "PYSPARK_DRIVER_PYTHON": chosen}
    if is_local_master(master):
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


def spark_jars_option(
    jars_dir: Path | None = None, *, s3a: bool = False, spark_version: str | None = None
) -> str:
    """The comma-separated value for `spark.jars` / `spark-submit --jars`, for the Spark
    release given or this environment's pyspark; with `s3a`, also the jars of Hadoop's S3A
    file system (a checkpoint or output on S3). From `jars_dir`, else the jar setting
    (`spark/jars.py`)."""
    version = spark_version or check_pyspark_version()
    jars = [
        *spark_connector_jars(jars_dir, version),
        *(s3a_jars(jars_dir, version) if s3a else []),
    ]
    return ",".join(str(j) for j in jars)


def local_spark_session(
    app_name: str = "kafkaspark",
    *,
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
    jars_dir: Path | None = None,
    s3a: bool = False,
) -> SparkSession:
    """A SparkSession whose driver runs in this process, with the Kafka connector (and, with
    `s3a`, Hadoop's S3A) jars: in local mode, or in client mode against a cluster's master.

    In local mode the jars go on the JVM's class path, not in `spark.jars`: Spark copies each
    `spark.jars` entry into the executor's temporary folder, and in local mode the executor is
    this JVM (568 MB per driver with S3A's jars). Spark's temporary files go to a scratch
    folder of this process that the next local driver reaps once this one is gone
    (`spark/scratch.py`)."""
    find_java()
    version = check_pyspark_version()
    # A job that names its jars (`spark.jars` in its spark_conf) needs none resolved here.
    given_jars = (conf or {}).get("spark.jars")
    jars = given_jars or spark_jars_option(jars_dir, s3a=s3a, spark_version=version)
    for key, value in python_env(master).items():
        os.environ.setdefault(key, value)

    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    settings = {**session_defaults(master), **(conf or {})}
    java_options = fast_java_options("spark", jars_dir)
    class_path: str | None = None
    if is_local_master(master):
        scratch = driver_scratch(app_name)
        settings = {**scratch_conf(scratch), **settings}
        # The JVM's perf-data file (/tmp/hsperfdata_<user>/<pid>) is kept in memory instead:
        # a killed JVM left it behind. `jcmd <pid>` still reaches the JVM; `jps` lists it no more.
        java_options += [f"-Djava.io.tmpdir={scratch}", "-XX:+PerfDisableSharedMem"]
        # Only a JVM not started yet takes a class path; a running one gets `spark.jars`.
        if not given_jars and SparkContext._gateway is None:
            class_path, jars = jars.replace(",", os.pathsep), ""
    if java_options:
        # pyspark hands these to spark-submit, which starts the driver JVM with them.
        given = settings.get("spark.driver.extraJavaOptions")
        settings["spark.driver.extraJavaOptions"] = " ".join(
            [*java_options, *([given] if given else [])]
        )
    builder = SparkSession.builder.master(master).appName(app_name)
    if jars:
        builder = builder.config("spark.jars", jars)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with dist_class_path(class_path):
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def scratch_conf(scratch: Path) -> dict[str, str]:
    """Spark's and Hadoop's temporary folders (block manager, shuffle and fetched files, S3A's
    upload buffers) inside a driver's scratch folder; a job's own settings win over these."""
    return {
        "spark.local.dir": str(scratch),
        "spark.hadoop.hadoop.tmp.dir": str(scratch / "hadoop"),
    }


@contextmanager
def dist_class_path(class_path: str | None) -> Iterator[None]:
    """`SPARK_DIST_CLASSPATH` extended by `class_path` while pyspark starts the JVM. Spark's
    launcher puts it after its own jars, where `spark.driver.extraClassPath` would come
    first: the class archive of a fast start (`spark/fast_jvm.py`) maps only into a JVM
    whose class path begins with the one it was built with."""
    if not class_path:
        yield
        return
    before = os.environ.get(DIST_CLASSPATH_ENV)
    os.environ[DIST_CLASSPATH_ENV] = os.pathsep.join([*([before] if before else []), class_path])
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(DIST_CLASSPATH_ENV, None)
        else:
            os.environ[DIST_CLASSPATH_ENV] = before
