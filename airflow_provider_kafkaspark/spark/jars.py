"""Where a driver's JVM parts are: Java itself, and the jars of the Kafka connector (and of
Hadoop's S3A file system) for the driver's Spark release.

The jar folder is an explicit setting: `$KAFKASPARK_JARS_DIR` (or a folder a caller passes),
holding one folder per set, `spark-kafka-<spark version>/` and `s3a-<spark version>/`, each
with the set's artifacts as `<artifact>-<version>.jar` (Maven's file names). A job that names
its own jars (`spark.jars` in its spark_conf) needs neither. Resolving the sets from Maven
Central is the dev stack's business (`kafkaspark local jars resolve`), not this module's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from airflow_provider_kafkaspark.errors import JarsSettingError, JavaNotFoundError
from airflow_provider_kafkaspark.versions import SPARK_VERSION, spark_line

JARS_DIR_ENV = "KAFKASPARK_JARS_DIR"
MIN_JAVA_MAJOR = 17


def connector_bundle(spark_version: str) -> str:
    """The folder of a Spark release's Kafka connector jars (`versions.SparkLine`)."""
    return f"spark-kafka-{spark_version}"


def s3a_bundle(spark_version: str) -> str:
    """The folder of the S3A jars that match a Spark release's Hadoop."""
    return f"s3a-{spark_version}"


def jar_file_name(coordinate: str) -> str:
    """`group:artifact:version` -> `artifact-version.jar`, as Maven copies it."""
    _group, artifact, version = coordinate.split(":")
    return f"{artifact}-{version}.jar"


def jars_setting(jars_dir: Path | None = None) -> tuple[Path, str]:
    """The jar folder and the name of the setting it came from (for error messages): the
    folder given, else `$KAFKASPARK_JARS_DIR`. Raises `JarsSettingError` when neither is
    set or the folder does not exist."""
    if jars_dir is not None:
        setting, folder = f"jars_dir={jars_dir}", Path(jars_dir)
    else:
        value = os.environ.get(JARS_DIR_ENV)
        if not value:
            raise JarsSettingError(
                f"{JARS_DIR_ENV} is not set: point it at the folder holding the connector "
                f"jars (spark-kafka-<version>/, s3a-<version>/), or name the jars in the "
                f"job's spark_conf (spark.jars)"
            )
        setting, folder = f"{JARS_DIR_ENV}={value}", Path(value)
    if not folder.is_dir():
        raise JarsSettingError(f"{setting}: the folder {folder} does not exist")
    return folder, setting


def artifact_set_jars(bundle: str, artifacts: tuple[str, ...], jars_dir: Path | None) -> list[Path]:
    """The jars of one set (`bundle`'s folder under the jar setting), once every artifact of
    the set is there; raises `JarsSettingError` naming the setting and the missing artifact."""
    root, setting = jars_setting(jars_dir)
    folder = root / bundle
    for coordinate in artifacts:
        if not (folder / jar_file_name(coordinate)).is_file():
            raise JarsSettingError(
                f"{setting}: {folder} lacks {jar_file_name(coordinate)} (artifact {coordinate})"
            )
    return sorted(folder.glob("*.jar"))


def spark_connector_jars(
    jars_dir: Path | None = None, spark_version: str = SPARK_VERSION
) -> list[Path]:
    """The Kafka connector jars of a Spark release (`versions.SparkLine.connector_artifacts`)."""
    artifacts = spark_line(spark_version).connector_artifacts()
    return artifact_set_jars(connector_bundle(spark_version), artifacts, jars_dir)


def s3a_jars(jars_dir: Path | None = None, spark_version: str = SPARK_VERSION) -> list[Path]:
    """The jars a driver of a Spark release needs for a checkpoint on S3
    (`versions.SparkLine.s3a_artifacts`)."""
    artifacts = spark_line(spark_version).s3a_artifacts()
    return artifact_set_jars(s3a_bundle(spark_version), artifacts, jars_dir)


def find_java() -> Path:
    """The `java` of `$JAVA_HOME`, else of `PATH`; Java 17 or newer."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if not candidate.is_file():
            raise JavaNotFoundError(
                f"Java not found: JAVA_HOME={java_home} has no bin/java; "
                f"point JAVA_HOME at a Java {MIN_JAVA_MAJOR}+ installation"
            )
        java = candidate
    else:
        found = shutil.which("java")
        if not found:
            raise JavaNotFoundError(
                f"Java not found: no `java` on PATH and JAVA_HOME is unset; "
                f"install Java {MIN_JAVA_MAJOR}+ or set JAVA_HOME"
            )
        java = Path(found)
    major = java_major_version(java)
    if major < MIN_JAVA_MAJOR:
        raise JavaNotFoundError(
            f"Java {major} at {java} is too old: Kafka 4 and Spark 4 need Java {MIN_JAVA_MAJOR}+"
        )
    return java


def java_major_version(java: Path) -> int:
    try:
        out = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError as exc:
        raise JavaNotFoundError(f"Java at {java} cannot run: {exc}") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        raise JavaNotFoundError(f"Java at {java} did not report a version")
    first = int(match.group(1))
    # Java 8 and older report "1.8.0_x".
    return int(match.group(2) or 0) if first == 1 else first
