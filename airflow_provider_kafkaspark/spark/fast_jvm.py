"""Faster local JVM starts: the options that map a class-data-sharing (AppCDS) archive of the
classes a Spark driver or a Kafka broker loads, and C1-only compilation.

A local Spark driver spends its first ~10 s (on 2 cores) loading, verifying and compiling
Spark's classes before its first batch, a Kafka broker ~4 s; with an archive of those classes
mapped in and the optimising compiler off, the same starts take about half as long.

Opt-in through `KAFKASPARK_FAST_JVM=1` (the test suite and `make demo` set it): C1-only code
runs long jobs slower, so benchmarks and real deployments keep the JVM's defaults. The
archives live next to the jar folder (`<jars dir>/../jvm/`) and are built by the dev stack
(`kafkaspark local jars archive`, `kafkaspark_devstack/jvm_archive.py`); one the JVM cannot
use is skipped by the JVM with a one-line warning, never a failed start.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from airflow_provider_kafkaspark.spark.jars import JARS_DIR_ENV
from airflow_provider_kafkaspark.versions import KAFKA_VERSION, SPARK_VERSION

FAST_JVM_ENV = "KAFKASPARK_FAST_JVM"
# C1 only: the optimising compiler's work pays off after minutes, not in a JVM's first seconds.
C1_ONLY = "-XX:TieredStopAtLevel=1"

Kind = Literal["spark", "kafka"]
KINDS: tuple[Kind, ...] = ("spark", "kafka")


def archive_path(kind: Kind, jars_dir: Path | None = None) -> Path | None:
    """Next to the jar folder (given, else `$KAFKASPARK_JARS_DIR`): `<jars>/../jvm/
    spark-<version>.jsa` (the version of this environment's pyspark); None when no jar
    folder is set."""
    setting = os.environ.get(JARS_DIR_ENV)
    root = jars_dir or (Path(setting) if setting else None)
    if root is None:
        return None
    version = _pyspark_version() if kind == "spark" else KAFKA_VERSION
    return root.parent / "jvm" / f"{kind}-{version}.jsa"


def _pyspark_version() -> str:
    try:
        import pyspark
    except ImportError:
        return SPARK_VERSION
    return str(pyspark.__version__)


def fast_java_options(kind: Kind, jars_dir: Path | None = None) -> list[str]:
    """The JVM options for a fast start; none unless `KAFKASPARK_FAST_JVM=1`."""
    if os.environ.get(FAST_JVM_ENV) != "1":
        return []
    archive = archive_path(kind, jars_dir)
    if archive is not None and archive.is_file():
        return [C1_ONLY, f"-XX:SharedArchiveFile={archive}"]
    return [C1_ONLY]
