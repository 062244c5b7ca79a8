"""What the YARN backend hands the official SparkSubmitHook (replaced here by a recorder; the
submit itself runs against a real YARN in tests/cluster): the runner with the spec file, the
provider's code as a zip, the restart policy in YARN's terms, and credentials in a private
properties file rather than on the command line."""

from __future__ import annotations

import base64
import json
import stat
import zipfile
from pathlib import Path
from typing import Any, ClassVar

import pytest

from airflow_provider_kafkaspark.backends.base import SubmitOptions
from airflow_provider_kafkaspark.backends.package_archive import package_zip
from airflow_provider_kafkaspark.backends.yarn import (
    YarnBackend,
    kerberos_login_of,
    restart_conf,
    submit_environment,
    submitted_application,
    with_submit_tag,
)
from airflow_provider_kafkaspark.core.cluster.hadoop_credentials import decode_secret_keys
from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef
from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
from airflow_provider_kafkaspark.core.cluster.spnego import KerberosLogin
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import (
    ClusterUnavailableError,
    InvalidArgumentError,
    InvalidInputError,
)
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from airflow_provider_kafkaspark.spark.secrets import ALIAS_PREFIX

SECRET = "s3ntinel-secret-key"
APP_ID = "application_1700000000000_0042"


class RecordingHook:
    calls: ClassVar[list[dict[str, Any]]] = []
    app_id: ClassVar[str | None] = APP_ID

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self._yarn_application_id: str | None = None

    def submit(self, application: str, env: dict[str, str] | None = None) -> None:
        token_file = next(
            o.split("=", 1)[1]
            for o in (env or {}).get("SPARK_SUBMIT_OPTS", "").split()
            if o.startswith("-Dhadoop.token.files=")
        )
        files = {
            "secrets": decode_secret_keys(Path(token_file).read_bytes()),
            "secrets_mode": stat.S_IMODE(Path(token_file).stat().st_mode),
            "properties": Path(self.kwargs["properties_file"]).read_text(),
            "properties_mode": stat.S_IMODE(Path(self.kwargs["properties_file"]).stat().st_mode),
            "spec": json.loads(Path(self.kwargs["files"]).read_text()),
            "package": zipfile.ZipFile(self.kwargs["py_files"].split(",")[0]).namelist(),
            "shipped": {
                Path(f).name: zipfile.ZipFile(f).namelist()
                for f in self.kwargs["py_files"].split(",")[1:]
                if "://" not in f
            },
        }
        RecordingHook.calls.append({"application": application, **self.kwargs, **files})
        self._yarn_application_id = self.app_id


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> type[RecordingHook]:
    from airflow.providers.apache.spark.hooks import spark_submit

    RecordingHook.calls, RecordingHook.app_id = [], APP_ID
    monkeypatch.setattr(spark_submit, "SparkSubmitHook", RecordingHook)
    extra = {"deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": "http://rm:8088"}
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_YARN",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": extra}),
    )
    conf_dir = tmp_path / "spark-conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text("spark.pyspark.python /opt/py/bin/python\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    return RecordingHook


def spec() -> JobSpec:
    raw = job_spec_dict(bootstrap_servers="k:9092", checkpoint="s3://b/cp", job_name="ip_count")
    raw["spark_conf"] = {"spark.executor.memory": "2g"}
    return JobSpec.from_dict(raw)


def test_a_submit_hands_the_runner_the_code_and_the_policy(
    recorder: type[RecordingHook], tmp_path: Path
) -> None:
    options = SubmitOptions(
        workdir=str(tmp_path),
        restart_policy=RestartPolicy(max_restarts=3, window_s=600),
        env={"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": SECRET},
    )
    submitted = YarnBackend("spark_yarn", jars="/j/kafka.jar").submit(spec(), options)
    assert submitted.details["application_id"] == APP_ID
    assert submitted.ref == YarnJobRef("ip_count", "s3://b/cp", APP_ID, "http://rm:8088")
    (call,) = recorder.calls
    assert call["application"].endswith("airflow_provider_kafkaspark/spark/runner.py")
    assert call["conn_id"] == "spark_yarn" and call["deploy_mode"] == "cluster"
    assert call["application_args"] == ["--spec", "ip_count.spec.json"]
    assert call["spec"]["job_name"] == "ip_count"
    assert "airflow_provider_kafkaspark/spark/runner.py" in call["package"]
    assert call["jars"] == "/j/kafka.jar"
    conf = call["conf"]
    assert conf["spark.yarn.maxAppAttempts"] == "4"
    assert conf["spark.yarn.am.attemptFailuresValidityInterval"] == "600s"
    assert conf["spark.yarn.submit.waitAppCompletion"] == "false"
    assert conf["spark.executor.memory"] == "2g"
    # The secret reaches the driver through the credentials spark-submit's login reads from
    # a private token file: not in the conf, the properties file or the shipped spec.
    assert SECRET not in json.dumps(conf)
    assert SECRET not in call["properties"] and SECRET not in json.dumps(call["spec"])
    assert call["properties"].splitlines()[0] == "spark.pyspark.python /opt/py/bin/python"
    assert call["secrets_mode"] == 0o600
    assert call["secrets"] == {
        f"{ALIAS_PREFIX}AWS_ACCESS_KEY_ID": b"AKIA",
        f"{ALIAS_PREFIX}AWS_SECRET_ACCESS_KEY": SECRET.encode(),
    }
    assert not Path(call["properties_file"]).exists()  # removed after the submit


def test_python_path_folders_travel_in_py_files_and_the_spec_names_them(
    recorder: type[RecordingHook], tmp_path: Path
) -> None:
    code = tmp_path / "dags" / "jobs"
    code.mkdir(parents=True)
    (code / "clicks_job.py").write_text("def transform(df):\n    return df\n")
    given = JobSpec.from_dict({**spec().to_dict(), "python_path": [str(code), "s3://b/extra.zip"]})
    YarnBackend("spark_yarn").submit(given, SubmitOptions(workdir=str(tmp_path)))
    (call,) = recorder.calls
    assert call["shipped"] == {"python_path_0_jobs.zip": ["clicks_job.py"]}
    assert call["py_files"].endswith(",s3://b/extra.zip")
    # The driver reads the shipped name, never the submit host's path.
    assert call["spec"]["python_path"] == ["python_path_0_jobs.zip", "s3://b/extra.zip"]
    assert str(tmp_path) not in json.dumps(call["spec"])


def test_a_submit_without_an_application_id_is_an_error(
    recorder: type[RecordingHook], tmp_path: Path
) -> None:
    recorder.app_id = None
    with pytest.raises(ClusterUnavailableError, match=r"ip_count.*no application id"):
        YarnBackend("spark_yarn").submit(spec(), SubmitOptions(workdir=str(tmp_path)))


def test_a_connection_without_the_resource_manager_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_NORM",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}),
    )
    with pytest.raises(InvalidInputError, match=r"'spark_norm'.*yarn_resourcemanager_webapp"):
        YarnBackend("spark_norm").resource_manager()


def test_restart_policy_in_yarn_terms() -> None:
    assert restart_conf(None) == {"spark.yarn.maxAppAttempts": "1"}
    conf = restart_conf(RestartPolicy(max_restarts=0, window_s=0.2))
    assert conf["spark.yarn.maxAppAttempts"] == "1"
    assert conf["spark.yarn.am.attemptFailuresValidityInterval"] == "1s"


def test_the_package_zip_is_importable(tmp_path: Path) -> None:
    import subprocess
    import sys

    archive = package_zip(tmp_path)
    names = zipfile.ZipFile(archive).namelist()
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    probe = "import airflow_provider_kafkaspark.core.spec.jobspec as m; print(m.__file__)"
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(archive)!r}); {probe}"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith(str(archive))
    assert package_zip(tmp_path / "..").read_bytes() == archive.read_bytes()  # same code, bytes


def test_a_reference_of_another_backend_is_refused() -> None:
    from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef

    local = LocalJobRef("j", "/cp", "h", 5, "", "local[2]")
    with pytest.raises(InvalidArgumentError, match="local backend, this is the yarn"):
        YarnBackend().force_kill(local)


def test_a_connection_may_name_two_resource_managers(monkeypatch: pytest.MonkeyPatch) -> None:
    given = "http://rm1:8088/, http://rm2:8088"
    extra = {"deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": given}
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_HA",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": extra}),
    )
    assert YarnBackend("spark_ha").resource_manager() == "http://rm1:8088,http://rm2:8088"
    extra["yarn_resourcemanager_webapp_address"] = "http://rm1:8088,rm2:8088"
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_HA",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": extra}),
    )
    with pytest.raises(InvalidInputError, match=r"'spark_ha'.*'rm2:8088' is not an http"):
        YarnBackend("spark_ha").resource_manager()


def test_the_spnego_login_comes_from_the_connection_kerberos_fields(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keytab = b"\x05\x02 the keys"
    extra = {
        "deploy-mode": "cluster",
        "principal": "airflow@KAFKASPARK.TEST",
        "keytab": base64.b64encode(keytab).decode(),  # as the Spark provider's form keeps it
    }
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_KRB", json.dumps({"conn_type": "spark", "host": "yarn", "extra": extra})
    )
    login = YarnBackend("spark_krb").kerberos_login()
    assert login.principal == "airflow@KAFKASPARK.TEST"
    assert login.source == "spark connection 'spark_krb'"
    assert login.keytab is not None
    written = Path(login.keytab)
    assert written.read_bytes() == keytab
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert stat.S_IMODE(written.parent.stat().st_mode) == 0o700
    # The same keytab again: the same file, not one more.
    assert YarnBackend("spark_krb").kerberos_login().keytab == login.keytab


def test_without_kerberos_fields_the_host_credentials_log_in() -> None:
    assert kerberos_login_of("c", {}).keytab is None
    assert "KRB5CCNAME" in kerberos_login_of("c", {}).source
    assert YarnBackend().kerberos_login() == KerberosLogin()  # a reference alone: the host's
    assert kerberos_login_of("c", {"principal": "me@R"}).principal == "me@R"


def test_a_bad_connection_keytab_is_named_never_shown() -> None:
    with pytest.raises(InvalidInputError, match=r"'spark_krb'.*no `principal`"):
        kerberos_login_of("spark_krb", {"keytab": base64.b64encode(b"\x05\x02").decode()})
    with pytest.raises(InvalidInputError, match="not a base64-encoded keytab") as caught:
        kerberos_login_of("spark_krb", {"principal": "me@R", "keytab": "hunter2-secret"})
    assert "hunter2" not in str(caught.value)


def test_the_submit_s_id_travels_as_an_application_tag_next_to_the_job_s(
    recorder: type[RecordingHook], tmp_path: Path
) -> None:
    tagged = JobSpec.from_dict({**spec().to_dict(), "spark_conf": {"spark.yarn.tags": "team-a"}})
    options = SubmitOptions(workdir=str(tmp_path), submit_id="AB12")
    YarnBackend("spark_yarn").submit(tagged, options)
    (call,) = recorder.calls
    assert call["conf"]["spark.yarn.tags"] == "team-a,kafkaspark-submit-ab12"
    assert with_submit_tag({"a": "b"}, None) == {"a": "b"}


def test_the_submitted_application_is_the_live_one_of_this_job() -> None:
    apps = [
        {"id": "application_1_0001", "name": "ip_count", "state": "FINISHED", "startedTime": 3},
        {"id": "application_1_0002", "name": "other", "state": "RUNNING", "startedTime": 2},
        {"id": "application_1_0003", "name": "ip_count", "state": "ACCEPTED", "startedTime": 1},
    ]
    assert submitted_application(apps, "ip_count") == "application_1_0003"
    assert submitted_application(apps[:2], "ip_count") is None
    assert submitted_application([], "ip_count") is None


def test_staged_pyspark_archives_are_named_unless_the_caller_named_them(tmp_path: Path) -> None:
    token = tmp_path / "t.hdts"
    staged = "s3a://b/s/kafkaspark-jars/a/pyspark.zip"
    env = submit_environment(token, {"PATH": "/bin"}, pyspark_archives=staged)
    assert env["PYSPARK_ARCHIVES_PATH"] == staged
    mine = {"PYSPARK_ARCHIVES_PATH": "local:/opt/spark/python/lib/pyspark.zip"}
    assert submit_environment(token, mine, pyspark_archives=staged) == {
        **mine,
        "SPARK_SUBMIT_OPTS": f"-Dhadoop.token.files={token}",
    }
    assert "PYSPARK_ARCHIVES_PATH" not in submit_environment(token, {})
