"""Which Spark may continue a checkpoint another wrote, and how a job names its driver's
Spark (pure rules and spec fields)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.backends.local_driver import driver_python
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec, JobSpecError
from airflow_provider_kafkaspark.core.state.spark_compat import (
    continue_refusal,
    newest,
    release_line,
)
from airflow_provider_kafkaspark.spark.local_session import python_env


def test_release_lines_parse_plain_and_suffixed_versions() -> None:
    assert release_line("3.5.7") == (3, 5)
    assert release_line("4.0.0-preview1") == (4, 0)
    assert release_line("4.1") == (4, 1)
    assert release_line("unknown") is None


@pytest.mark.parametrize(
    ("written_by", "runs_on"),
    [("3.5.7", "4.0.0"), ("3.5.3", "3.5.7"), ("3.5.7", "3.5.3"), ("4.0.0", "4.0.0")],
)
def test_a_later_or_same_line_continues_a_checkpoint(written_by: str, runs_on: str) -> None:
    assert continue_refusal(written_by, runs_on) is None


def test_an_earlier_line_is_refused_with_both_versions_and_the_way_out() -> None:
    refusal = continue_refusal("4.0.0", "3.5.7")
    assert refusal is not None
    assert "written by Spark 4.0.0" in refusal and "runs Spark 3.5.7" in refusal
    assert "Spark 4.0 or later" in refusal and "'offsets' mode" in refusal


@pytest.mark.parametrize(("written_by", "runs_on"), [(None, "3.5.7"), ("4.0.0", None)])
def test_nothing_is_refused_when_a_version_is_unknown(
    written_by: str | None, runs_on: str | None
) -> None:
    assert continue_refusal(written_by, runs_on) is None


def test_newest_compares_release_lines_not_strings() -> None:
    assert newest(["3.5.7", "4.0.0", None]) == "4.0.0"
    assert newest(["3.10.0", "3.5.7"]) == "3.10.0"
    assert newest([None, "garbage"]) is None


def spec(**extra: object) -> dict[str, object]:
    return {
        "job_name": "j",
        "source": {"bootstrap_servers": "k:9092", "subscribe": ["t"]},
        "sink": {"kind": "console"},
        "checkpoint_location": "/tmp/ckpt",
        **extra,
    }


def test_a_job_names_a_supported_spark_release() -> None:
    assert JobSpec.from_dict(spec(spark_version="3.5.7")).validate().spark_version == "3.5.7"
    assert JobSpec.from_dict(spec()).validate().spark_version is None
    with pytest.raises(JobSpecError, match=r"'spark_version'.*'3\.5\.5' is not supported"):
        JobSpec.from_dict(spec(spark_version="3.5.5")).validate()
    with pytest.raises(JobSpecError, match="'spark_version': expected str"):
        JobSpec.from_dict(spec(spark_version=3.5)).validate()


def test_the_driver_interpreter_comes_from_sparks_own_settings() -> None:
    assert driver_python({}) == sys.executable
    assert driver_python({"spark.pyspark.python": "/w/python"}) == "/w/python"
    both = {"spark.pyspark.python": "/w/python", "spark.pyspark.driver.python": "/d/python"}
    assert driver_python(both) == "/d/python"
    env = python_env("local[2]", "/d/python")
    assert env["PYSPARK_PYTHON"] == env["PYSPARK_DRIVER_PYTHON"] == "/d/python"


def test_a_driver_records_a_newer_spark_and_refuses_an_older_one(tmp_path: Path) -> None:
    from airflow_provider_kafkaspark.core.control.folder import ControlFolder
    from airflow_provider_kafkaspark.errors import InvalidInputError
    from airflow_provider_kafkaspark.spark.spark_release import check_checkpoint_release

    checkpoint = str(tmp_path / "ckpt")
    control = ControlFolder(checkpoint)
    check_checkpoint_release(checkpoint, "3.5.7")  # a new checkpoint: recorded
    assert (recorded := control.read_written_by()) and recorded.spark_version == "3.5.7"
    check_checkpoint_release(checkpoint, "3.5.3")  # same line, older patch: not recorded
    assert (recorded := control.read_written_by()) and recorded.spark_version == "3.5.7"
    check_checkpoint_release(checkpoint, "4.0.0")  # the upgrade
    assert (recorded := control.read_written_by()) and recorded.spark_version == "4.0.0"
    with pytest.raises(InvalidInputError, match=r"ckpt: the checkpoint was written by Spark 4\.0"):
        check_checkpoint_release(checkpoint, "3.5.7")
    assert (recorded := control.read_written_by()) and recorded.spark_version == "4.0.0"
