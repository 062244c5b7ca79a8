"""The Kubernetes backend's edges that need no cluster: a reference of another backend, a
spec without an image, and an API server that does not answer (a closed port on loopback,
reached for real), each a typed error naming what was expected."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from kubernetes import client

from airflow_provider_kafkaspark.backends.base import SubmitOptions
from airflow_provider_kafkaspark.backends.kubernetes import KubernetesBackend
from airflow_provider_kafkaspark.core.cluster.job_ref import KubernetesJobRef, YarnJobRef
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import (
    ClusterUnavailableError,
    InvalidArgumentError,
    InvalidInputError,
)
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict

REF = KubernetesJobRef("ip_count", "s3://b/cp", "streaming", "ip-count-1a2b3c4d", "uid-1")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def unreachable() -> KubernetesBackend:
    configuration = client.Configuration()
    configuration.host = f"https://127.0.0.1:{closed_port()}"
    configuration.retries = 0
    return KubernetesBackend(api=client.ApiClient(configuration))


def test_an_unreachable_api_server_is_named_with_the_job() -> None:
    backend = unreachable()
    with pytest.raises(ClusterUnavailableError) as refused:
        backend.status(REF)
    message = str(refused.value)
    assert "Kubernetes Job streaming/ip-count-1a2b3c4d" in message
    assert backend.api_server() in message and "does not answer" in message
    with pytest.raises(ClusterUnavailableError, match="ip-count-1a2b3c4d"):
        backend.force_kill(REF)


def test_a_reference_of_another_backend_is_refused_before_any_call() -> None:
    yarn = YarnJobRef("ip_count", "s3://b/cp", "application_1_0001", "http://rm:8088")
    with pytest.raises(InvalidArgumentError, match="for the yarn backend, this is the kubernetes"):
        unreachable().force_kill(yarn)


def test_a_spec_without_an_image_is_refused_before_any_call() -> None:
    spec = JobSpec.from_dict(
        job_spec_dict(
            bootstrap_servers="k:9092",
            checkpoint="s3://b/cp",
            job_name="ip_count",
            source_topic="in",
            sink_topic="out",
        )
    )
    with pytest.raises(InvalidInputError, match=r"spark\.kubernetes\.container\.image"):
        unreachable().submit(spec, SubmitOptions(workdir="/tmp"))


def test_pod_templates_are_read_and_a_missing_one_is_named(tmp_path: Path) -> None:
    from airflow_provider_kafkaspark.backends.kubernetes import pod_templates

    base = job_spec_dict(bootstrap_servers="k:9092", checkpoint="s3://b/cp")
    driver = tmp_path / "driver.yaml"
    driver.write_text("kind: Pod\nspec: {priorityClassName: high}\n")
    key = "spark.kubernetes.driver.podTemplateFile"
    spec = JobSpec.from_dict({**base, "spark_conf": {key: str(driver)}})
    assert pod_templates(spec) == {key: {"kind": "Pod", "spec": {"priorityClassName": "high"}}}
    missing = str(tmp_path / "executor.yaml")
    other = "spark.kubernetes.executor.podTemplateFile"
    spec = JobSpec.from_dict({**base, "spark_conf": {other: missing}})
    with pytest.raises(InvalidInputError, match=rf"spark_conf {other}: .*executor\.yaml"):
        pod_templates(spec)
