"""SparkSessions whose driver runs in this process (local mode, or client mode against a
cluster), with the Kafka connector jars on their classpath."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_kafkaspark.errors import LocalStackError
from airflow_provider_kafkaspark.local.jars import find_java, s3a_jars, spark_connector_jars
from airflow_provider_kafkaspark.local.jvm_archive import fast_java_options
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


# Spark's own settings for the interpreters of a job's driver and of its Python workers.
DRIVER_PYTHON_CONF = "spark.pyspark.driver.python"
WORKER_PYTHON_CONF = "spark.pyspark.python"


def driver_python(spark_conf: Mapping[str, str]) -> str:
    """The interpreter a driver this host starts runs: the job's `spark.pyspark.driver.python`
    (else `spark.pyspark.python`), as spark-submit would take it, else this one. How a job
    runs on another Spark release than the Airflow environment's (a driver environment of
    its own, `scripts/driver_env.sh`)."""
    chosen = spark_conf.get(DRIVER_PYTHON_CONF) or spark_conf.get(WORKER_PYTHON_CONF)
    return chosen or sys.executable


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
    file system (a checkpoint or output on S3)."""
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
    `s3a`, Hadoop's S3A) jars: in local mode, or in client mode against a cluster's master."""
    find_java()
    version = check_pyspark_version()
    # A job that names its jars (`spark.jars` in its spark_conf) needs none resolved here.
    given = (conf or {}).get("spark.jars")
    jars = given or spark_jars_option(jars_dir, s3a=s3a, spark_version=version)
    for key, value in python_env(master).items():
        os.environ.setdefault(key, value)

    from pyspark.sql import SparkSession

    settings = {**session_defaults(master), **(conf or {})}
    fast = fast_java_options("spark", jars_dir)
    if fast:
        # pyspark hands these to spark-submit, which starts the driver JVM with them.
        given = settings.get("spark.driver.extraJavaOptions")
        settings["spark.driver.extraJavaOptions"] = " ".join([*fast, *([given] if given else [])])
    builder = SparkSession.builder.master(master).appName(app_name).config("spark.jars", jars)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
