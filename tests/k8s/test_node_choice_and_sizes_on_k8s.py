"""Driver and executor pods sized and placed by Spark's own settings, on the real cluster with
two nodes: the driver pinned by a node selector to the second node, the executors to the
first; the driver container's cgroup limits equal to what `spark.driver.memory`,
`spark.driver.memoryOverhead` and `spark.kubernetes.driver.limit.cores` say, and its JVM's
heap to `spark.driver.memory`; executors sized as Spark sizes a Python application's; the
pull secret on both; a driver pod template (a label, a volume, a variable) and an executor
pod template (a label) taking effect. (Named to run before the node loss test, which loses
the second node.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from airflow.sdk import Context

from airflow_provider_kafkaspark.backends import driver_status
from airflow_provider_kafkaspark.core.cluster.job_ref import KubernetesJobRef, job_ref_from_dict
from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
from airflow_provider_kafkaspark.examples.access_events import generate_events, produce_events
from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
from kafkaspark_devstack.drivers import pod_driver_pids
from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.process import command_lines, program_of
from kafkaspark_devstack.s3 import LocalS3Server
from tests.cluster.yarn_apps import wait
from tests.integration.kafka_util import create_topic
from tests.k8s.k8s_stack import (
    BUCKET,
    NAMESPACE,
    example_spec,
    job_pods,
    kube_api,
    submit_arguments,
)
from tests.lifecycle_story import committed, stop_with_savepoint

SOURCE, SINK = "k8s_shape_source", "k8s_shape_sink"
PULL_SECRET = "kafkaspark-registry"
MIB = 1024 * 1024

DRIVER_TEMPLATE = """
apiVersion: v1
kind: Pod
metadata:
  labels: {team: payments}
spec:
  volumes: [{name: scratch, emptyDir: {}}]
  containers:
    - name: spark-driver
      env: [{name: KAFKASPARK_TEMPLATE_SAYS, value: hello}]
      volumeMounts: [{name: scratch, mountPath: /scratch}]
"""
EXECUTOR_TEMPLATE = """
apiVersion: v1
kind: Pod
metadata:
  labels: {kafkaspark-test/from-template: "yes"}
spec:
  containers: [{name: executor}]
"""


def cgroup_limits(pid: int) -> tuple[int, float | None]:
    """Memory limit (bytes) and CPU limit (cores; None without one) of `pid`'s cgroup, v1 or
    v2, as the kernel enforces them."""
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    paths = {
        ctl: path
        for _, ctls, path in (line.split(":", 2) for line in lines)
        for ctl in ctls.split(",")
    }
    root = Path("/sys/fs/cgroup")
    if "memory" in paths:  # v1
        memory = int(
            (root / "memory" / paths["memory"].lstrip("/") / "memory.limit_in_bytes").read_text()
        )
        cpu_dir = root / "cpu" / paths["cpu"].lstrip("/")
        quota = int((cpu_dir / "cpu.cfs_quota_us").read_text())
        period = int((cpu_dir / "cpu.cfs_period_us").read_text())
        return memory, None if quota < 0 else quota / period
    folder = root / paths[""].lstrip("/")
    quota_text, period_text = (folder / "cpu.max").read_text().split()
    cores = None if quota_text == "max" else int(quota_text) / int(period_text)
    return int((folder / "memory.max").read_text()), cores


def java_heap_of(pid: int) -> str | None:
    """The -Xmx of the JVM in the same container as `pid` (the driver's gateway)."""
    cgroup = Path(f"/proc/{pid}/cgroup").read_text()
    for other, command in command_lines():
        if program_of(command) != b"java":
            continue
        try:
            if Path(f"/proc/{other}/cgroup").read_text() != cgroup:
                continue
        except OSError:
            continue
        for arg in command.split(b"\0"):
            if arg.startswith(b"-Xmx"):
                return arg[4:].decode()
    return None


def executor_pods(api: Any, prefix: str) -> list[dict[str, Any]]:
    from kubernetes import client

    listed = client.CoreV1Api(api).list_namespaced_pod(
        NAMESPACE, label_selector="spark-role=executor"
    )
    pods = api.sanitize_for_serialization(listed).get("items") or []
    return [p for p in pods if p["metadata"]["name"].startswith(prefix)]


def make_pull_secret(api: Any) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    body = {
        "metadata": {"name": PULL_SECRET},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": json.dumps({"auths": {}})},
    }
    try:
        client.CoreV1Api(api).create_namespaced_secret(NAMESPACE, body)
    except ApiException as exc:
        if exc.status != 409:
            raise


def test_driver_and_executor_pods_get_their_sizes_placement_and_templates(
    connections: None,
    k8s: LocalKubernetesCluster,
    second_node: str,
    bridge_kafka: LocalKafkaCluster,
    bridge_s3: LocalS3Server,
    tmp_path: Path,
) -> None:
    bootstrap = bridge_kafka.bootstrap_servers
    create_topic(bootstrap, SOURCE, 2)
    create_topic(bootstrap, SINK, 2)
    produce_events(bootstrap, SOURCE, list(generate_events(2_000, seed=89)))
    api = kube_api(k8s)
    make_pull_secret(api)
    first = k8s.state.node
    (tmp_path / "driver-pod.yaml").write_text(DRIVER_TEMPLATE)
    (tmp_path / "executor-pod.yaml").write_text(EXECUTOR_TEMPLATE)
    checkpoint = f"s3://{BUCKET}/{tmp_path.name}/checkpoint"
    spec = example_spec(k8s, checkpoint, "k8s_shape", SOURCE, SINK)
    spec["spark_conf"].update(
        {
            "spark.driver.memory": "1200m",
            "spark.driver.memoryOverhead": "400m",
            "spark.kubernetes.driver.limit.cores": "1500m",
            "spark.kubernetes.driver.node.selector.kubernetes.io/hostname": second_node,
            "spark.kubernetes.executor.node.selector.kubernetes.io/hostname": first,
            "spark.executor.memory": "1g",
            "spark.kubernetes.executor.limit.cores": "1",
            "spark.kubernetes.container.image.pullSecrets": PULL_SECRET,
            "spark.kubernetes.driver.annotation.example.com/owner": "payments",
            "spark.kubernetes.driver.podTemplateFile": str(tmp_path / "driver-pod.yaml"),
            "spark.kubernetes.driver.podTemplateContainerName": "spark-driver",
            "spark.kubernetes.executor.podTemplateFile": str(tmp_path / "executor-pod.yaml"),
        }
    )
    handle = SubmitStreamingJobOperator(
        task_id="submit", job_spec=spec, **submit_arguments(tmp_path)
    ).execute(cast(Context, {}))
    ref = job_ref_from_dict(handle["job_ref"])
    assert isinstance(ref, KubernetesJobRef)
    with s3_options_scope(bridge_s3.storage_options()):
        wait("a first committed batch", lambda: committed(checkpoint), lambda n: n >= 0, 420)

    (driver_pod,) = job_pods(api, ref)
    pod_spec = driver_pod["spec"]
    assert pod_spec["nodeName"] == second_node, pod_spec
    (driver, *_) = pod_spec["containers"]
    assert driver["resources"] == {
        "requests": {"cpu": "100m", "memory": "1600Mi"},
        "limits": {"cpu": "1500m", "memory": "1600Mi"},
    }
    assert pod_spec["imagePullSecrets"] == [{"name": PULL_SECRET}]
    assert driver_pod["metadata"]["labels"]["team"] == "payments"
    assert driver_pod["metadata"]["annotations"]["example.com/owner"] == "payments"
    assert {"name": "scratch", "mountPath": "/scratch"} in driver["volumeMounts"]
    assert {"name": "KAFKASPARK_TEMPLATE_SAYS", "value": "hello"} in driver["env"]

    # What the kernel enforces on the driver's container, and the JVM's heap inside it.
    (pid,) = pod_driver_pids()
    memory, cores = cgroup_limits(pid)
    assert (memory, cores) == (1600 * MIB, 1.5)
    assert java_heap_of(pid) == "1200m"

    (executor,) = wait(
        "the executor pod", lambda: executor_pods(api, ref.name), lambda p: len(p) == 1, 120
    )
    assert executor["spec"]["nodeName"] == first
    (container, *_) = executor["spec"]["containers"]
    # 1g and a Python application's overhead (0.4 of it): 1024 + 409 MiB.
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "1433Mi"}
    assert container["resources"]["limits"] == {"cpu": "1", "memory": "1433Mi"}
    assert executor["spec"]["imagePullSecrets"] == [{"name": PULL_SECRET}]
    assert executor["metadata"]["labels"]["kafkaspark-test/from-template"] == "yes"

    savepoints = f"s3://{BUCKET}/{tmp_path.name}/savepoints"
    stopped = stop_with_savepoint("stop", handle, savepoints, "s3_k8s")
    assert stopped["stopped"]["clean"] is True, stopped
    final = wait("the Job's end", lambda: driver_status(ref).state, lambda s: s != "Running", 120)
    assert final == "Complete", driver_status(ref)
