"""The loss of the node that runs the driver: a second node ("another host": namespaces of its
own on the cluster's bridge) is added to the session's cluster, the example job is submitted
through the operators with the first node cordoned (so its driver and executors run on the
second), then the second node loses power (every process of it SIGKILLed at once) and its
Node object is deleted, as a cloud's node controller does for a VM that is gone.

What Kubernetes does then, as this test checks it: the node turns NotReady one grace period
after its last lease renewal; the pod garbage collector fails the pods bound to the deleted
Node (phase Failed, condition DisruptionTarget) about 40 s later and removes them; the Job's
pod failure policy ignores a DisruptionTarget failure, so the Job starts a new driver pod on
the first node without counting a failure (`status.failed` stays 0), and the new driver goes
on from the checkpoint. The output read `read_committed` has no duplicate and no gap.

The figures (node killed to NotReady, to the old pod failed, to the new pod running, to the
next committed batch) are printed and written to `k8s_node_loss_figures.json` in the test's
folder. Afterwards the second node is gone: no process, namespace, veth, route or cgroup."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

from airflow.sdk import Context

from airflow_provider_kafkaspark.backends import driver_status
from airflow_provider_kafkaspark.core.cluster.job_ref import KubernetesJobRef, job_ref_from_dict
from airflow_provider_kafkaspark.core.cluster.kubernetes_job import NODE_LOST_KEY
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
from airflow_provider_kafkaspark.examples.access_events import (
    AccessEvent,
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster
from kafkaspark_devstack.k8s.host import cgroup_pids, cluster_pids
from kafkaspark_devstack.kafka import LocalKafkaCluster
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
from tests.lifecycle_story import (
    check_output,
    committed,
    read_to_end,
    stop_with_savepoint,
)

SOURCE, SINK = "k8s_loss_source", "k8s_loss_sink"
NODE_LOST_AFTER_S = 10


def node_ready(api: Any, name: str) -> str:
    """The Ready condition's status ("True", "Unknown", ...), or "gone" without the Node."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        found = client.CoreV1Api(api).read_node(name)
    except ApiException as exc:
        if exc.status == 404:
            return "gone"
        raise
    for condition in found.status.conditions or []:
        if condition.type == "Ready":
            return str(condition.status)
    return "none"


def pod_state(api: Any, name: str) -> str:
    """`phase` plus the DisruptionTarget reason when the pod has one; "gone" once removed."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        pod = client.CoreV1Api(api).read_namespaced_pod(name, NAMESPACE)
    except ApiException as exc:
        if exc.status == 404:
            return "gone"
        raise
    reasons = [str(c.reason) for c in pod.status.conditions or [] if c.type == "DisruptionTarget"]
    return " ".join([str(pod.status.phase), *reasons])


def running_elsewhere(api: Any, ref: KubernetesJobRef, lost: str) -> dict[str, Any] | None:
    for pod in job_pods(api, ref):
        status, spec = pod.get("status") or {}, pod.get("spec") or {}
        if spec.get("nodeName") not in (None, lost) and status.get("phase") == "Running":
            return pod
    return None


def test_the_driver_moves_to_the_other_node_when_its_node_is_lost(
    connections: None,
    k8s: LocalKubernetesCluster,
    second_node: str,
    bridge_kafka: LocalKafkaCluster,
    bridge_s3: LocalS3Server,
    tmp_path: Path,
) -> None:
    bootstrap = bridge_kafka.bootstrap_servers
    create_topic(bootstrap, SOURCE, 3)
    create_topic(bootstrap, SINK, 3)
    events = list(generate_events(8_000, seed=71))
    # Half before the loss, half after it: a batch of the new driver has new data to read.
    produce_events(bootstrap, SOURCE, events[:4_000])
    checkpoint = f"s3://{BUCKET}/{tmp_path.name}/checkpoint"
    spec = example_spec(k8s, checkpoint, "k8s_node_loss", SOURCE, SINK)
    spec["spark_conf"][NODE_LOST_KEY] = str(NODE_LOST_AFTER_S)
    common = {"job_spec": spec, **submit_arguments(tmp_path)}
    figures: dict[str, Any] = {}
    kafka = KafkaFacade({"bootstrap.servers": bootstrap})
    s3 = bridge_s3.storage_options()
    api = kube_api(k8s)
    first = k8s.state.node

    # The first node shares this machine's namespaces with the control plane: the node to
    # lose is the second, so the driver must run there.
    assert k8s.kubectl("cordon", first).returncode == 0
    handle = SubmitStreamingJobOperator(task_id="submit", **common).execute(cast(Context, {}))
    ref = job_ref_from_dict(handle["job_ref"])
    assert isinstance(ref, KubernetesJobRef) and ref.namespace == NAMESPACE
    with s3_options_scope(s3):
        wait("a first committed batch", lambda: committed(checkpoint), lambda n: n >= 0, 420)
    (old,) = job_pods(api, ref)
    lost = old["spec"]["nodeName"]
    assert lost == second_node, old["spec"]
    old_name = old["metadata"]["name"]
    tolerations = {t.get("key"): t.get("tolerationSeconds") for t in old["spec"]["tolerations"]}
    assert tolerations["node.kubernetes.io/unreachable"] == NODE_LOST_AFTER_S, tolerations
    assert k8s.kubectl("uncordon", first).returncode == 0

    with s3_options_scope(s3):
        before = committed(checkpoint)
    killed_at = time.monotonic()
    k8s.kill_node(lost)
    figures["batch_before_kill"] = before
    # Its daemons, shims and every pod process (driver, executors): all gone at once.
    pods_cgroup = k8s.node_host(lost).cgroup_root
    wait(
        "the lost node's pod processes gone", lambda: cgroup_pids(pods_cgroup), lambda p: not p, 10
    )
    assert cluster_pids(k8s.folder / "nodes" / lost) == []
    produce_events(bootstrap, SOURCE, events[4_000:])
    flush_ms = max(e.event_time_ms for e in events) + 60_000
    produce_events(bootstrap, SOURCE, [AccessEvent("255.255.255.255", flush_ms, "/", 200)])

    wait("the lost node NotReady", lambda: node_ready(api, lost), lambda s: s != "True", 120)
    figures["killed_to_not_ready_s"] = round(time.monotonic() - killed_at, 1)
    # The cloud's node controller: the VM is gone, so is its Node.
    k8s.delete_node(lost)
    figures["killed_to_node_deleted_s"] = round(time.monotonic() - killed_at, 1)
    seen: list[str] = []

    def old_pod() -> str:
        state = pod_state(api, old_name)
        if not seen or seen[-1] != state:
            seen.append(state)
        return state

    wait("the old driver pod failed", old_pod, lambda s: s.startswith(("Failed", "gone")), 240)
    figures["killed_to_old_pod_failed_s"] = round(time.monotonic() - killed_at, 1)
    new = wait(
        "a driver pod running on the other node",
        lambda: running_elsewhere(api, ref, lost),
        lambda p: p is not None,
        240,
    )
    figures["killed_to_new_pod_running_s"] = round(time.monotonic() - killed_at, 1)
    assert new is not None and new["spec"]["nodeName"] == first
    with s3_options_scope(s3):
        wait(
            "a batch of the driver on the other node",
            lambda: committed(checkpoint),
            lambda n: n > before,
            420,
        )
        figures["killed_to_next_commit_s"] = round(time.monotonic() - killed_at, 1)
        wait("the old pod removed", old_pod, lambda s: s == "gone", 120)
        figures["old_pod_states"] = seen
        status = driver_status(ref)
        # A disruption, not a failure: the pod failure policy's Ignore rule matched.
        assert status.alive is True and status.detail["failed"] == 0, status
        figures["job_failed"] = status.detail["failed"]
        wait(
            "the source read to its end",
            lambda: read_to_end(checkpoint, kafka, [SOURCE]),
            bool,
            300,
        )

    savepoints = f"s3://{BUCKET}/{tmp_path.name}/savepoints"
    stopped = stop_with_savepoint("stop", handle, savepoints, "s3_k8s")
    assert stopped["stopped"]["clean"] is True, stopped
    final = wait("the Job's end", lambda: driver_status(ref).state, lambda s: s != "Running", 120)
    assert final == "Complete", driver_status(ref)

    check_output(
        bootstrap, SINK, 3, events, flush_ms, figures, tmp_path / "k8s_node_loss_figures.json"
    )
