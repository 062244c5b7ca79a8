"""The Kubernetes Job a submit writes, and what a Job's status says of its driver: the
restart policy in the Job's own terms (final exits fail it, disruptions do not count)."""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from airflow_provider_kafkaspark.core.cluster import kubernetes_job as k8s
from airflow_provider_kafkaspark.core.cluster.restart import FINAL_EXITS, RestartPolicy
from airflow_provider_kafkaspark.errors import InvalidInputError

SETTINGS = k8s.DriverPodSettings(namespace="streaming", image="kafkaspark/spark:4.0.0")
TWO_RESTARTS = RestartPolicy(max_restarts=2)


def manifest(policy: RestartPolicy | None = TWO_RESTARTS) -> dict[str, Any]:
    return k8s.job_manifest(
        name="ip-count-00ff00ff",
        job_name="ip_count",
        checkpoint="s3://b/cp",
        shipped=["airflow_provider_kafkaspark.zip", "jobs.zip"],
        env_names=["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"],
        settings=SETTINGS,
        policy=policy,
    )


@pytest.mark.parametrize(
    ("job_name", "expected"),
    [
        ("ip_count", "ip-count-abcd"),
        ("IP.Count__v2", "ip-count-v2-abcd"),
        ("7days", "j-7days-abcd"),
        ("___", "job-abcd"),
        ("x" * 80, "x" * 40 + "-abcd"),
    ],
)
def test_resource_names_are_dns_labels(job_name: str, expected: str) -> None:
    assert k8s.resource_name(job_name, "abcd") == expected


def test_final_exits_fail_the_job_and_disruptions_do_not_count() -> None:
    rules = manifest()["spec"]["podFailurePolicy"]["rules"]
    fail = rules[0]
    assert fail["action"] == "FailJob"
    assert fail["onExitCodes"] == {
        "containerName": "driver",
        "operator": "In",
        "values": [2, 3, 4, 5, 6],
    }
    # Exit 0 completes the Job by itself (and is not allowed in an In rule).
    assert 0 in FINAL_EXITS and 0 not in fail["onExitCodes"]["values"]
    assert rules[1] == {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}


def test_the_restart_budget_is_the_backoff_limit() -> None:
    assert manifest()["spec"]["backoffLimit"] == 2
    assert manifest(None)["spec"]["backoffLimit"] == 0


def test_the_job_starts_suspended_with_its_spec_and_credentials_from_the_secret() -> None:
    job = manifest()
    assert job["spec"]["suspend"] is True
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"  # the Job restarts, not the kubelet
    assert pod["serviceAccountName"] == "kafkaspark-driver"
    container = pod["containers"][0]
    assert container["args"][-1] == "/opt/kafkaspark/spec/job.spec.json"
    env = {e["name"]: e for e in container["env"]}
    assert env["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"] == {
        "name": "ip-count-00ff00ff",
        "key": "AWS_SECRET_ACCESS_KEY",
    }
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["job-spec"]["secret"]["items"] == [
        {"key": "job.spec.json", "path": "job.spec.json"}
    ]
    assert volumes["job-code"]["configMap"]["name"] == "ip-count-00ff00ff"
    assert env["PYTHONPATH"]["value"] == (
        "/opt/kafkaspark/job/airflow_provider_kafkaspark.zip:/opt/kafkaspark/job/jobs.zip"
    )
    annotations = job["metadata"]["annotations"]
    assert annotations[k8s.ANNOTATION_JOB] == "ip_count"


def test_the_driver_reaches_the_api_server_and_names_itself_from_inside_its_pod() -> None:
    args = shlex.split(k8s.submit_args(["airflow_provider_kafkaspark.zip"]))
    assert args[:2] == [
        "--master",
        "k8s://https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)",
    ]
    assert "spark.driver.host=$(KAFKASPARK_POD_IP)" in args
    assert "spark.kubernetes.driver.pod.name=$(KAFKASPARK_POD_NAME)" in args
    assert (
        args[args.index("--py-files") + 1] == "/opt/kafkaspark/job/airflow_provider_kafkaspark.zip"
    )
    assert args[-1] == "pyspark-shell"


def test_a_lost_node_is_given_up_after_the_setting() -> None:
    settings = k8s.DriverPodSettings(namespace="n", image="i", node_lost_after_s=20)
    job = k8s.job_manifest(
        name="a-1",
        job_name="a",
        checkpoint="c",
        shipped=[],
        env_names=[],
        settings=settings,
        policy=None,
    )
    tolerations = job["spec"]["template"]["spec"]["tolerations"]
    assert {t["key"] for t in tolerations} == {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    }
    assert {t["tolerationSeconds"] for t in tolerations} == {20}


def test_settings_come_from_spark_conf_and_a_missing_image_is_named() -> None:
    conf = {
        k8s.IMAGE_KEY: "img:1",
        k8s.SERVICE_ACCOUNT_KEY: "sa",
        k8s.PULL_POLICY_KEY: "Never",
        "spark.pyspark.python": "/opt/venv/bin/python",
    }
    settings = k8s.DriverPodSettings.from_spark_conf(conf, "ns", job_name="j")
    assert (settings.image, settings.service_account, settings.pull_policy) == (
        "img:1",
        "sa",
        "Never",
    )
    assert settings.python == "/opt/venv/bin/python"
    with pytest.raises(InvalidInputError, match=r"job j: .*'spark\.kubernetes\.container\.image'"):
        k8s.DriverPodSettings.from_spark_conf({}, "ns", job_name="j")


def test_a_config_map_over_the_limit_names_its_files() -> None:
    k8s.check_config_map_size({"a.zip": b"x" * 1000}, "j")
    with pytest.raises(InvalidInputError, match=r"big.zip 1000001 B.*s3://"):
        k8s.check_config_map_size({"big.zip": b"x" * 1_000_001}, "j")


def condition(kind: str, reason: str = "") -> dict[str, str]:
    return {"type": kind, "status": "True", "reason": reason}


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (None, k8s.JobState(True, "Pending")),
        ({"active": 1}, k8s.JobState(True, "Running")),
        # Between two pods (a crash, the back-off): the Job will start another driver.
        ({"failed": 1}, k8s.JobState(True, "Pending")),
        ({"conditions": [condition("Complete")], "succeeded": 1}, k8s.JobState(False, "Complete")),
        (
            {"conditions": [condition("Failed", "PodFailurePolicy")]},
            k8s.JobState(False, "Failed", "PodFailurePolicy"),
        ),
        (
            {"conditions": [condition("FailureTarget", "BackoffLimitExceeded")], "active": 1},
            k8s.JobState(True, "FailureTarget", "BackoffLimitExceeded"),
        ),
        ({"conditions": [condition("Suspended")]}, k8s.JobState(False, "Suspended")),
        (
            {"conditions": [{"type": "Complete", "status": "False"}], "active": 1},
            k8s.JobState(True, "Running"),
        ),
    ],
)
def test_job_state(status: dict[str, Any] | None, expected: k8s.JobState) -> None:
    assert k8s.job_state(status) == expected


def pod(
    created: str, phase: str = "Pending", waiting: dict[str, str] | None = None
) -> dict[str, Any]:
    statuses = [{"image": "kafkaspark/spark:4", "state": {"waiting": waiting}}] if waiting else []
    return {
        "metadata": {"name": f"p-{created}", "creationTimestamp": created},
        "status": {"phase": phase, "containerStatuses": statuses},
    }


def test_a_driver_pod_that_will_never_start_is_named() -> None:
    assert k8s.driver_start([]) == k8s.DriverStart(False)
    assert k8s.driver_start([pod("1", "Running")]).started
    creating = pod("1", waiting={"reason": "ContainerCreating"})
    assert k8s.driver_start([creating]) == k8s.DriverStart(False)
    never = pod("2", waiting={"reason": "ErrImageNeverPull", "message": "image not present"})
    problem = k8s.driver_start([never]).problem
    assert problem is not None and "pod p-2" in problem and "kafkaspark/spark:4" in problem
    missing = {"reason": "ImagePullBackOff", "message": "manifest unknown: not found"}
    assert "not found" in str(k8s.driver_start([pod("3", waiting=missing)]).problem)
    # A pull that failed for another reason (a registry down) may heal: not a problem yet.
    flaky = {"reason": "ErrImagePull", "message": "dial tcp: i/o timeout"}
    assert k8s.driver_start([pod("3", waiting=flaky)]) == k8s.DriverStart(False)
    # The newest pod speaks for the Job: an old failed pod does not hide a stuck new one.
    assert k8s.driver_start([pod("1", "Failed"), never]).problem == problem


def test_executors_get_the_credentials_by_reference_to_the_secret() -> None:
    conf = k8s.driver_spark_conf(SETTINGS, "ip-count-1", ["AWS_SECRET_ACCESS_KEY"])
    assert conf["spark.kubernetes.executor.secretKeyRef.AWS_SECRET_ACCESS_KEY"] == (
        "ip-count-1:AWS_SECRET_ACCESS_KEY"
    )
    assert conf["spark.kubernetes.namespace"] == "streaming"
    assert conf["spark.kubernetes.executor.podNamePrefix"] == "ip-count-1"


def test_the_node_lost_seconds_come_from_spark_conf_and_a_bad_value_is_named() -> None:
    conf = {k8s.IMAGE_KEY: "img:1"}
    assert k8s.DriverPodSettings.from_spark_conf(conf, "ns", job_name="j").node_lost_after_s == 300
    conf[k8s.NODE_LOST_KEY] = "10"
    assert k8s.DriverPodSettings.from_spark_conf(conf, "ns", job_name="j").node_lost_after_s == 10
    conf[k8s.NODE_LOST_KEY] = "soon"
    with pytest.raises(InvalidInputError, match=r"nodeLostAfterSeconds must be whole seconds"):
        k8s.DriverPodSettings.from_spark_conf(conf, "ns", job_name="j")
