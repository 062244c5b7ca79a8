"""The driver pod's shape from Spark's own settings: resources as spark-submit sets them,
placement, metadata, pull secrets and a pod template merged under what the package sets."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_kafkaspark.core.cluster import kubernetes_job as k8s
from airflow_provider_kafkaspark.core.cluster import kubernetes_pod as pods
from airflow_provider_kafkaspark.errors import InvalidInputError

IMAGE = {"spark.kubernetes.container.image": "kafkaspark/spark:4.0.0"}


def pod_of(conf: dict[str, str], template: dict[str, Any] | None = None) -> dict[str, Any]:
    settings = k8s.DriverPodSettings.from_spark_conf(
        {**IMAGE, **conf}, "streaming", job_name="ip_count", template=template
    )
    job = k8s.job_manifest(
        name="ip-count-00ff00ff",
        job_name="ip_count",
        checkpoint="s3://b/cp",
        shipped=["jobs.zip"],
        env_names=[],
        settings=settings,
        policy=None,
    )
    template_pod: dict[str, Any] = job["spec"]["template"]
    return template_pod


@pytest.mark.parametrize(
    ("conf", "requests", "limits"),
    [
        # Spark's defaults: 1 core, 1g and the larger of 384 MiB and 0.4 of it.
        ({}, {"cpu": "1", "memory": "1433Mi"}, {"memory": "1433Mi"}),
        (
            {
                "spark.driver.memory": "2g",
                "spark.driver.cores": "2",
                "spark.kubernetes.driver.limit.cores": "1500m",
            },
            {"cpu": "2", "memory": "2867Mi"},
            {"memory": "2867Mi", "cpu": "1500m"},
        ),
        (
            {
                "spark.driver.memory": "512m",
                "spark.driver.memoryOverhead": "256m",
                "spark.kubernetes.driver.request.cores": "0.5",
                "spark.driver.cores": "4",
            },
            {"cpu": "0.5", "memory": "768Mi"},
            {"memory": "768Mi"},
        ),
        (
            {"spark.driver.memory": "4096", "spark.driver.memoryOverheadFactor": "0.1"},
            {"cpu": "1", "memory": "4505Mi"},
            {"memory": "4505Mi"},
        ),
        (
            {
                "spark.driver.resource.gpu.amount": "1",
                "spark.driver.resource.gpu.vendor": "nvidia.com",
            },
            {"cpu": "1", "memory": "1433Mi"},
            {"memory": "1433Mi", "nvidia.com/gpu": "1"},
        ),
    ],
)
def test_driver_resources_are_sparks(
    conf: dict[str, str], requests: dict[str, str], limits: dict[str, str]
) -> None:
    (driver,) = pod_of(conf)["spec"]["containers"]
    assert driver["resources"] == {"requests": requests, "limits": limits}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("spark.driver.memory", "1.5g"),
        ("spark.driver.memoryOverhead", "lots"),
        ("spark.kubernetes.driver.limit.cores", "two"),
        ("spark.driver.memoryOverheadFactor", "0"),
    ],
)
def test_a_bad_size_or_quantity_is_named(key: str, value: str) -> None:
    with pytest.raises(InvalidInputError, match=rf"job ip_count: {key} must be .*{value!r}"):
        pod_of({key: value})


def test_placement_metadata_and_pull_secrets_come_from_sparks_settings() -> None:
    pod = pod_of(
        {
            "spark.kubernetes.node.selector.pool": "streaming",
            "spark.kubernetes.driver.node.selector.kubernetes.io/hostname": "node-b",
            "spark.kubernetes.driver.label.team": "payments",
            "spark.kubernetes.driver.annotation.prometheus.io/scrape": "true",
            "spark.kubernetes.container.image.pullSecrets": "registry-a, registry-b",
            "spark.kubernetes.scheduler.name": "volcano",
        }
    )
    spec = pod["spec"]
    assert spec["nodeSelector"] == {"pool": "streaming", "kubernetes.io/hostname": "node-b"}
    assert spec["imagePullSecrets"] == [{"name": "registry-a"}, {"name": "registry-b"}]
    assert spec["schedulerName"] == "volcano"
    assert pod["metadata"]["labels"]["team"] == "payments"
    assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    # The package's own labels are kept: the run's pods are found by them.
    assert pod["metadata"]["labels"][k8s.LABEL_RUN] == "ip-count-00ff00ff"


TEMPLATE = """
apiVersion: v1
kind: Pod
metadata:
  labels: {team: payments, kafkaspark.apache.org/run: not-this}
spec:
  priorityClassName: streaming-high
  serviceAccountName: not-this-one
  tolerations: [{key: dedicated, operator: Equal, value: streaming, effect: NoSchedule}]
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms:
    [{matchExpressions: [{key: pool, operator: In, values: [streaming]}]}]}}}
  volumes: [{name: scratch, emptyDir: {}}]
  containers:
    - name: log-shipper
      image: fluent-bit
    - name: spark-driver
      image: not-this-image
      resources: {requests: {ephemeral-storage: 1Gi, cpu: "8"}}
      volumeMounts: [{name: scratch, mountPath: /scratch}]
      env: [{name: TZ, value: UTC}]
"""


def test_a_pod_template_keeps_what_spark_has_no_setting_for_and_the_package_wins() -> None:
    template = pods.parse_pod_template(TEMPLATE, "/dags/driver.yaml", "ip_count")
    pod = pod_of(
        {"spark.kubernetes.driver.podTemplateContainerName": "spark-driver"}, template=template
    )
    spec = pod["spec"]
    assert spec["priorityClassName"] == "streaming-high"
    assert spec["affinity"]["nodeAffinity"]
    assert spec["serviceAccountName"] == k8s.DEFAULT_SERVICE_ACCOUNT
    assert {
        "key": "dedicated",
        "operator": "Equal",
        "value": "streaming",
        "effect": "NoSchedule",
    } in spec["tolerations"]
    assert any(t["key"] == "node.kubernetes.io/unreachable" for t in spec["tolerations"])
    driver, sidecar = spec["containers"]
    assert sidecar["name"] == "log-shipper"
    assert driver["name"] == k8s.CONTAINER and driver["image"] == "kafkaspark/spark:4.0.0"
    assert driver["resources"]["requests"] == {
        "ephemeral-storage": "1Gi",
        "cpu": "1",
        "memory": "1433Mi",
    }
    assert {"name": "scratch", "mountPath": "/scratch"} in driver["volumeMounts"]
    assert driver["env"][0] == {"name": "TZ", "value": "UTC"}
    assert {v["name"] for v in spec["volumes"]} == {"scratch", "job-code", "job-spec"}
    assert pod["metadata"]["labels"]["team"] == "payments"
    assert pod["metadata"]["labels"][k8s.LABEL_RUN] == "ip-count-00ff00ff"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("kind: Pod\nspec: [1, 2]", "not a Pod"),
        ("kind: Deployment\nspec: {}", "kind 'Deployment', expected Pod"),
        ("spec: {containers: [", "not YAML"),
    ],
)
def test_a_template_that_is_not_a_pod_is_named(text: str, says: str) -> None:
    with pytest.raises(InvalidInputError, match=rf"pod template /t.yaml: {says}"):
        pods.parse_pod_template(text, "/t.yaml", "ip_count")


def test_executors_get_the_python_overhead_factor_unless_the_job_names_one() -> None:
    settings = k8s.DriverPodSettings(namespace="n", image="i")
    conf = k8s.driver_spark_conf(settings, "x", [], {})
    assert conf["spark.executor.memoryOverheadFactor"] == "0.4"
    given = {"spark.executor.memoryOverhead": "1g"}
    assert "spark.executor.memoryOverheadFactor" not in k8s.driver_spark_conf(
        settings, "x", [], given
    )


@pytest.mark.parametrize(
    ("value", "mib"), [("1g", 1024), ("512m", 512), ("300", 300), ("2048k", 2), ("1t", 1 << 20)]
)
def test_sizes_read_as_spark_reads_them(value: str, mib: int) -> None:
    assert pods.size_mib(value, "k", "j") == mib
