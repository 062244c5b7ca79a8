"""The driver's side of the secrets: its spec filled from the variables its backend gave it
(the environment, or a YARN container's Hadoop credentials), the storage keys put into its
environment, the Kafka secrets kept out of it, and an embedded keytab written to a private
file."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.cluster.hadoop_credentials import encode_secret_keys
from airflow_provider_kafkaspark.core.kafka.security import EMBEDDED
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec, JobSpecError
from airflow_provider_kafkaspark.core.spec.secret_env import split_secrets
from airflow_provider_kafkaspark.spark.secrets import ALIAS_PREFIX, TOKEN_FILE_ENV, load_job_spec

PASSWORD = "s3ntinel-pa55word"


def spec(**kafka_config: str) -> JobSpec:
    return JobSpec.from_dict(
        {
            "job_name": "j",
            "source": {"bootstrap_servers": "b:9092", "subscribe": ["in"]},
            "sink": {"kind": "console"},
            "checkpoint_location": "/cp",
            "kafka_config": kafka_config,
        }
    )


def shipped(tmp_path: Path, given: JobSpec) -> tuple[Path, dict[str, str]]:
    written, variables = split_secrets(given)
    path = tmp_path / "job.spec.json"
    path.write_text(written.to_json())
    return path, variables


def test_a_yarn_container_reads_its_credentials(tmp_path: Path) -> None:
    given = spec(**{"security.protocol": "SASL_SSL", "sasl.password": PASSWORD})
    path, variables = shipped(tmp_path, given)
    variables["AWS_SECRET_ACCESS_KEY"] = "aws-secret"
    tokens = tmp_path / "container_tokens"
    tokens.write_bytes(
        encode_secret_keys({ALIAS_PREFIX + k: v.encode() for k, v in variables.items()})
    )
    environ = {TOKEN_FILE_ENV: str(tokens)}
    assert load_job_spec(str(path), environ) == given
    # The storage key joins the environment (s3fs reads it there); the Kafka secret does not.
    assert environ["AWS_SECRET_ACCESS_KEY"] == "aws-secret"
    assert PASSWORD not in environ.values()


def test_a_local_driver_reads_its_environment(tmp_path: Path) -> None:
    given = spec(**{"sasl.password": PASSWORD})
    path, variables = shipped(tmp_path, given)
    assert load_job_spec(str(path), dict(variables)) == given
    with pytest.raises(JobSpecError, match="did not get its secret"):
        load_job_spec(str(path), {})


def test_a_broken_token_file_is_a_bad_job(tmp_path: Path) -> None:
    path, _ = shipped(tmp_path, spec())
    (tmp_path / "tokens").write_bytes(b"not a token file")
    with pytest.raises(JobSpecError, match="HDTS"):
        load_job_spec(str(path), {TOKEN_FILE_ENV: str(tmp_path / "tokens")})


def test_an_embedded_keytab_becomes_a_private_file(tmp_path: Path) -> None:
    content = b"\x05\x02keytab"
    given = spec(
        **{
            "sasl.mechanism": "GSSAPI",
            "sasl.kerberos.keytab": EMBEDDED + base64.b64encode(content).decode(),
        }
    )
    path, variables = shipped(tmp_path, given)
    assert EMBEDDED not in path.read_text()  # the keytab travels as a secret
    loaded = load_job_spec(str(path), dict(variables))
    keytab = Path(loaded.kafka_config["sasl.kerberos.keytab"])
    assert keytab.read_bytes() == content
    assert stat.S_IMODE(keytab.stat().st_mode) == 0o600
