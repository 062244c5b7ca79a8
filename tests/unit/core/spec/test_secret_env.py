"""Secrets leave the shipped spec for variables of their own, and come back on the driver."""

from __future__ import annotations

import json

import pytest

from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec, JobSpecError
from airflow_provider_kafkaspark.core.spec.secret_env import (
    fill_secrets,
    split_secrets,
    variable_name,
)

SECRET = "s3ntinel-pa55word"


def spec() -> JobSpec:
    return JobSpec.from_dict(
        {
            "job_name": "secrets",
            "source": {
                "bootstrap_servers": "b:9092",
                "subscribe": ["in"],
                "options": {"kafka.sasl.jaas.config": f'x password="{SECRET}";'},
            },
            "sink": {"kind": "kafka", "topic": "out", "options": {"kafka.linger.ms": "5"}},
            "checkpoint_location": "/cp",
            "kafka_config": {
                "security.protocol": "SASL_SSL",
                "sasl.password": SECRET,
                "ssl.key.pem": f"KEY{SECRET}",
                "ssl.ca.pem": "CA",
            },
            "spark_conf": {"spark.hadoop.fs.s3a.secret.key": SECRET, "spark.ui.enabled": "false"},
        }
    )


def test_the_shipped_spec_holds_no_secret_and_the_driver_gets_it_back() -> None:
    given = spec()
    shipped, variables = split_secrets(given)
    text = shipped.to_json()
    assert SECRET not in text
    assert "CA" in json.loads(text)["kafka_config"]["ssl.ca.pem"]  # not a secret: stays
    assert shipped.secret_env == {
        "kafka_config.sasl.password": "KAFKASPARK_SECRET_KAFKA_CONFIG_SASL_PASSWORD",
        "kafka_config.ssl.key.pem": "KAFKASPARK_SECRET_KAFKA_CONFIG_SSL_KEY_PEM",
        "spark_conf.spark.hadoop.fs.s3a.secret.key": (
            "KAFKASPARK_SECRET_SPARK_CONF_SPARK_HADOOP_FS_S3A_SECRET_KEY"
        ),
        "source.options.kafka.sasl.jaas.config": (
            "KAFKASPARK_SECRET_SOURCE_OPTIONS_KAFKA_SASL_JAAS_CONFIG"
        ),
    }
    assert set(variables) == set(shipped.secret_env.values())
    # The file a driver reads loads as a spec, and filling it gives the spec that was split.
    read = JobSpec.from_json(text)
    assert fill_secrets(read, variables) == given
    # A second split (a restart's spec) finds nothing more to take.
    again, more = split_secrets(read)
    assert more == {} and again == read


def test_a_missing_variable_is_a_bad_job_named_by_its_setting() -> None:
    shipped, variables = split_secrets(spec())
    variables.pop(variable_name("kafka_config.sasl.password"))
    with pytest.raises(JobSpecError) as missing:
        fill_secrets(shipped, variables)
    message = str(missing.value)
    assert "'kafka_config.sasl.password'" in message
    assert "KAFKASPARK_SECRET_KAFKA_CONFIG_SASL_PASSWORD" in message
    assert SECRET not in message


def test_secret_env_names_only_the_providers_variables() -> None:
    raw = json.loads(spec().to_json())
    raw["secret_env"] = {"kafka_config.sasl.password": "AIRFLOW_CONN_X"}
    with pytest.raises(JobSpecError, match=r"secret_env\.kafka_config\.sasl\.password"):
        JobSpec.from_dict(raw)
