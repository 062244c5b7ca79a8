"""A driver started from this host needs Java and the connector jars of its Spark release
here: the local and standalone backends check both before anything starts (issue 44: an unset
KAFKASPARK_JARS_DIR used to crash-loop the driver under its supervisor, the cause only in the
driver's log), and a submit or a deploy checks them before it replaces a running driver."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.backends import local_driver
from airflow_provider_kafkaspark.backends.base import SubmitOptions, Submitted, preflight
from airflow_provider_kafkaspark.backends.local import LocalBackend, StandaloneBackend
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import InvalidInputError, JarsSettingError
from airflow_provider_kafkaspark.lifecycle.submit import SubmitRequest, submit_streaming_job
from airflow_provider_kafkaspark.spark.jars import JARS_DIR_ENV, jar_file_name
from airflow_provider_kafkaspark.versions import spark_line


def _spec(tmp_path: Path, **changes: Any) -> JobSpec:
    raw: dict[str, Any] = {
        "job_name": "orders",
        "source": {"bootstrap_servers": "localhost:9092", "subscribe": ["in"]},
        "sink": {"kind": "kafka_exactly_once", "topic": "out"},
        "checkpoint_location": str(tmp_path / "cp"),
        "spark_version": "4.0.0",
        **changes,
    }
    return JobSpec.from_dict(raw)


def _jars(root: Path, bundle: str, artifacts: tuple[str, ...]) -> None:
    folder = root / bundle
    folder.mkdir(parents=True)
    for artifact in artifacts:
        (folder / jar_file_name(artifact)).write_bytes(b"")


@pytest.mark.parametrize("backend", [LocalBackend("local[2]"), StandaloneBackend("spark://m:7")])
def test_an_unset_jar_setting_fails_the_submit_before_anything_starts(
    backend: LocalBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(JARS_DIR_ENV, raising=False)
    started: list[JobSpec] = []
    monkeypatch.setattr(local_driver, "start_local_job", lambda spec, *a, **k: started.append(spec))
    with pytest.raises(JarsSettingError, match=f"{JARS_DIR_ENV} is not set") as err:
        backend.submit(_spec(tmp_path), SubmitOptions(workdir=str(tmp_path / "w")))
    assert isinstance(err.value, InvalidInputError)  # fails the task without retries
    assert started == [] and not (tmp_path / "w").exists()


def test_a_missing_artifact_is_named_with_its_coordinate_and_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    artifacts = spark_line("4.0.0").connector_artifacts()
    _jars(tmp_path / "jars", "spark-kafka-4.0.0", artifacts[1:])
    monkeypatch.setenv(JARS_DIR_ENV, str(tmp_path / "jars"))
    with pytest.raises(JarsSettingError) as err:
        LocalBackend().check_submit(_spec(tmp_path))
    message = str(err.value)
    assert f"{JARS_DIR_ENV}={tmp_path / 'jars'}" in message
    assert str(tmp_path / "jars" / "spark-kafka-4.0.0") in message
    assert artifacts[0] in message  # group:artifact:version


def test_state_on_s3_needs_the_s3a_set_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    line = spark_line("4.0.0")
    _jars(tmp_path, "spark-kafka-4.0.0", line.connector_artifacts())
    monkeypatch.setenv(JARS_DIR_ENV, str(tmp_path))
    LocalBackend().check_submit(_spec(tmp_path))  # local state: the connector is enough
    with pytest.raises(JarsSettingError, match=r"s3a-4\.0\.0"):
        LocalBackend().check_submit(_spec(tmp_path, checkpoint_location="s3://b/cp"))


def test_a_job_naming_its_own_jars_needs_no_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(JARS_DIR_ENV, raising=False)
    LocalBackend().check_submit(_spec(tmp_path, spark_conf={"spark.jars": "/opt/k.jar"}))


def test_the_driver_interpreter_s_release_is_the_one_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An interpreter of another release (a driver environment): its jars, not this one's.
    fake = tmp_path / "python"
    fake.write_text(f"#!{sys.executable}\nprint('3.5.7')\n")
    fake.chmod(0o755)
    line = spark_line("3.5.7")
    _jars(tmp_path / "jars", "spark-kafka-3.5.7", line.connector_artifacts())
    monkeypatch.setenv(JARS_DIR_ENV, str(tmp_path / "jars"))
    conf = {"spark.pyspark.driver.python": str(fake)}
    LocalBackend().check_submit(_spec(tmp_path, spark_version=None, spark_conf=conf))
    broken = tmp_path / "nopyspark"
    broken.write_text(f"#!{sys.executable}\nimport sys; sys.exit('No module named pyspark')\n")
    broken.chmod(0o755)
    conf = {"spark.pyspark.driver.python": str(broken)}
    with pytest.raises(InvalidInputError, match=r"spark\.pyspark\.driver\.python.*has no pyspark"):
        LocalBackend().check_submit(_spec(tmp_path, spark_version=None, spark_conf=conf))


class ReplacingBackend(LocalBackend):
    """The local backend with its launcher replaced: counts starts (pure-logic stand-in)."""

    def __init__(self) -> None:
        super().__init__()
        self.started = 0

    def submit(self, spec: JobSpec, options: SubmitOptions) -> Submitted:
        self.started += 1
        raise AssertionError("no driver may start")


def test_a_replacing_submit_checks_before_it_stops_the_running_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(JARS_DIR_ENV, raising=False)
    spec = _spec(tmp_path)
    control = ControlFolder(spec.checkpoint_location)
    lease = Lease.new("orders", ttl_ms=600_000)
    control.acquire_lease(lease)
    request = SubmitRequest(
        spec=spec,
        kafka_client={"bootstrap.servers": "localhost:9092"},
        options=SubmitOptions(workdir=str(tmp_path / "w")),
        if_running="replace",
        probe_bootstrap=False,
    )
    backend = ReplacingBackend()
    with pytest.raises(JarsSettingError):
        submit_streaming_job(backend, request)
    assert backend.started == 0
    assert control.read_stop_request() is None  # the running driver was left alone
    held = control.read_lease()
    assert held is not None and held.owner_id == lease.owner_id


def test_backends_whose_drivers_start_elsewhere_have_no_preflight(tmp_path: Path) -> None:
    class Elsewhere:
        name = "yarn"

    with_no_jars = _spec(tmp_path, spark_version="3.5.7")
    preflight(Elsewhere(), with_no_jars)  # type: ignore[arg-type]
