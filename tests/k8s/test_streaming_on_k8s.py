"""The streaming job's lifecycle with its driver as the pod of a Kubernetes Job, through the
Airflow operators, a `spark` connection (a k8s:// master, deploy-mode cluster, a namespace)
and a `kubernetes` connection (the cluster's kubeconfig): submit, the Job restarting a killed
driver, a restart window with a partition added while the job is down (stop with savepoint,
restore as a new Job), and a stop; Kafka and S3 on the cluster's bridge, where pods reach
them; the sink's output read `read_committed` for duplicates and missing counts. Besides: a
bad job fails its Job at once (no restart), and a missing image or a namespace without the
driver's service account fails the submit.

The figures (submit to first committed batch, the Job's restart of a killed driver, the
restart window's downtime) are printed and written to `k8s_figures.json` in the test's
folder."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_kafkaspark.backends import driver_status
from airflow_provider_kafkaspark.core.cluster.job_ref import KubernetesJobRef, job_ref_from_dict
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
from airflow_provider_kafkaspark.examples.access_events import (
    AccessEvent,
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.examples.ip_count import (
    job_spec_dict,
)
from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator
from airflow_provider_kafkaspark.operators.submit import (
    RestoreStreamingJobOperator,
    SubmitStreamingJobOperator,
)
from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor
from kafkaspark_devstack.drivers import pod_driver_pids
from kafkaspark_devstack.k8s.bridge_host import BridgeHost
from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster
from kafkaspark_devstack.k8s.namespace import account_kubeconfig, prepare_namespace
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import LocalS3Server
from tests.cluster.yarn_apps import wait
from tests.integration.kafka_util import create_topic
from tests.k8s.k8s_stack import (
    BUCKET,
    NAMESPACE,
    add_partition,
    example_spec,
    job_body,
    job_pods,
    kube_api,
    spark_conf,
    submit_arguments,
)
from tests.lifecycle_story import (
    check_output,
    committed,
    lease_owner,
    read_to_end,
    stop_with_savepoint,
)

SOURCE, SINK = "k8s_source", "k8s_sink"
KAFKASPARK = str(Path(sys.executable).parent / "kafkaspark")


def test_submit_restart_restore_and_stop_on_kubernetes(
    connections: None,
    k8s: LocalKubernetesCluster,
    bridge_kafka: LocalKafkaCluster,
    bridge_s3: LocalS3Server,
    tmp_path: Path,
) -> None:
    bootstrap = bridge_kafka.bootstrap_servers
    create_topic(bootstrap, SOURCE, 3)
    create_topic(bootstrap, SINK, 3)
    events = list(generate_events(6_000, seed=53))
    produce_events(bootstrap, SOURCE, events)
    base = f"s3://{BUCKET}/{tmp_path.name}"
    checkpoint, savepoints = f"{base}/checkpoint", f"{base}/savepoints"
    spec = example_spec(k8s, checkpoint, "k8s_ip_count", SOURCE, SINK)
    common = {"job_spec": spec, **submit_arguments(tmp_path)}
    figures: dict[str, float] = {}
    kafka = KafkaFacade({"bootstrap.servers": bootstrap})
    s3 = bridge_s3.storage_options()
    api = kube_api(k8s)

    t0 = time.monotonic()
    handle = SubmitStreamingJobOperator(task_id="submit", **common).execute(cast(Context, {}))
    figures["submit_s"] = time.monotonic() - t0
    ref = job_ref_from_dict(handle["job_ref"])
    assert isinstance(ref, KubernetesJobRef) and ref.namespace == NAMESPACE
    assert handle["mode"] == "kubernetes" and "pid" not in handle
    with s3_options_scope(s3):
        wait("a first committed batch", lambda: committed(checkpoint), lambda n: n >= 0, 420)
        figures["submit_to_first_commit_s"] = time.monotonic() - t0
        first_owner = lease_owner(checkpoint)

        # The driver dies in its pod; the Job, not this host, starts another pod.
        (pid,) = pod_driver_pids()
        before = committed(checkpoint)
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        wait("a second driver pod", lambda: len(job_pods(api, ref)), lambda n: n >= 2, 240)
        wait(
            "a batch of the restarted driver",
            lambda: committed(checkpoint),
            lambda n: n > before,
            420,
        )
        figures["pod_killed_to_next_commit_s"] = time.monotonic() - killed_at
        assert lease_owner(checkpoint) not in (None, first_owner)
        status = driver_status(ref)
        assert status.alive is True and status.detail["failed"] == 1, status
        wait(
            "the source read to its end",
            lambda: read_to_end(checkpoint, kafka, [SOURCE]),
            bool,
            300,
        )

    def stop(task_id: str, job_handle: dict[str, Any]) -> dict[str, Any]:
        return stop_with_savepoint(task_id, job_handle, savepoints, "s3_k8s")

    # The restart window: stop with a savepoint; a partition is added while the job is down.
    window_start = time.monotonic()
    stopped = stop("stop", handle)
    assert stopped["stopped"]["clean"] is True, stopped
    figures["stop_and_savepoint_s"] = time.monotonic() - window_start
    # A clean stop (exit 0) completes the Job: never restarted.
    final = wait("the Job's end", lambda: driver_status(ref).state, lambda s: s != "Running", 120)
    assert final == "Complete", driver_status(ref)
    assert len(job_pods(api, ref)) == 2

    add_partition(bootstrap, SOURCE, 4)
    flush_ms = max(e.event_time_ms for e in events) + 60_000
    produce_events(bootstrap, SOURCE, [AccessEvent("255.255.255.255", flush_ms, "/", 200)])
    last = stopped["stopped"]["last_committed_batch"]
    restored = RestoreStreamingJobOperator(
        task_id="restore", savepoint_root=savepoints, restore_from=stopped["savepoint_id"], **common
    ).execute(cast(Context, {}))
    ref2 = job_ref_from_dict(restored["job_ref"])
    assert isinstance(ref2, KubernetesJobRef) and ref2.uid != ref.uid
    with s3_options_scope(s3):
        wait("the restored driver's batch", lambda: committed(checkpoint), lambda n: n > last, 420)
        figures["restart_window_downtime_s"] = time.monotonic() - window_start
    healthy = StreamingHealthSensor(
        task_id="health",
        handle=restored,
        kafka_conn_id="kafka_k8s",
        aws_conn_id="s3_k8s",
        min_new_batches=1,
        poll_interval_s=1,
        timeout=300,
        deferrable=False,
    ).execute(cast(Context, {}))
    assert healthy["state"] == "healthy", healthy
    # The scheduled reconcile: the checkpoint against Kafka's partitions, the new one among
    # them (fails the task on a CRITICAL finding).
    pushed: dict[str, Any] = {}
    ti = SimpleNamespace(xcom_push=lambda key, value: pushed.update({key: value}))
    reconciled = KafkaPartitionReconcileOperator(
        task_id="reconcile",
        checkpoint=checkpoint,
        kafka_conn_id="kafka_k8s",
        aws_conn_id="s3_k8s",
        subscribe=[SOURCE],
        fail_on="CRITICAL",
    ).execute(cast(Context, {"ti": ti}))
    assert pushed, reconciled
    with s3_options_scope(s3):
        wait(
            "the flush event read",
            lambda: read_to_end(checkpoint, kafka, [SOURCE]),
            bool,
            300,
        )
    # The last stop from another host: its own network address, pids and host name, with
    # nothing but the reference's text, the storage's variables and a kubeconfig.
    # (The `connections` fixture wrote the Airflow side's kubeconfig into this test's folder.)
    kubeconfig = tmp_path / "airflow.kubeconfig"
    person = {**bridge_s3.aws_environment(), "KUBECONFIG": str(kubeconfig)}
    with BridgeHost(k8s, "kafkaspark-ops", tmp_path / "ops") as ops:
        ref_text = json.dumps(restored["job_ref"])
        shown = ops.run([KAFKASPARK, "job", "stop", ref_text, "--json"], env=person)
        assert shown.returncode == 0, shown.stderr
        assert "Traceback" not in shown.stderr
        stopped_text = json.loads(shown.stdout)["stopped"]
        assert ", clean)" in stopped_text, stopped_text
        hostname = ops.run(["hostname"]).stdout.strip()
    assert hostname == "kafkaspark-ops"
    assert driver_status(ref2).state == "Complete", driver_status(ref2)

    check_output(bootstrap, SINK, 3, events, flush_ms, figures, tmp_path / "k8s_figures.json")


def test_a_bad_job_a_missing_image_and_a_bare_namespace_end_at_once(
    connections: None,
    monkeypatch: pytest.MonkeyPatch,
    k8s: LocalKubernetesCluster,
    bridge_kafka: LocalKafkaCluster,
    tmp_path: Path,
) -> None:
    bootstrap = bridge_kafka.bootstrap_servers
    create_topic(bootstrap, "k8s_bad_source", 1)
    create_topic(bootstrap, "k8s_bad_sink", 1)
    spec = job_spec_dict(
        bootstrap_servers="from-connection:9092",
        checkpoint=f"s3://{BUCKET}/{tmp_path.name}/checkpoint",
        job_name="k8s_bad_job",
        source_topic="k8s_bad_source",
        sink_topic="k8s_bad_sink",
    )
    spec["spark_conf"] = spark_conf(k8s)
    # Only the driver's analysis finds the column missing: a bad job (exit 4).
    del spec["transformation"]
    spec["sql"] = "SELECT no_such_column AS value FROM source"
    common = submit_arguments(tmp_path)
    api = kube_api(k8s)
    handle = SubmitStreamingJobOperator(task_id="bad", job_spec=spec, **common).execute(
        cast(Context, {})
    )
    ref = job_ref_from_dict(handle["job_ref"])
    assert isinstance(ref, KubernetesJobRef)
    final = wait(
        "the Job's end",
        lambda: driver_status(ref).state,
        lambda s: s in ("Complete", "Failed"),
        300,
    )
    status = driver_status(ref)
    # Exit 4 fails the Job by its pod failure policy: one pod, no restart.
    assert (final, status.detail["reason"]) == ("Failed", "PodFailurePolicy"), status
    assert len(job_pods(api, ref)) == 1

    spec["sql"] = "SELECT CAST(value AS STRING) AS value FROM source"
    spec["job_name"] = "k8s_no_image"
    spec["checkpoint_location"] = f"s3://{BUCKET}/{tmp_path.name}/checkpoint-2"
    spec["spark_conf"] = {
        **spark_conf(k8s),
        "spark.kubernetes.container.image": "kafkaspark/absent:1",
    }
    # A bad input: the task fails without a retry, naming the pod and the image.
    with pytest.raises(AirflowFailException, match=r"kafkaspark/absent:1") as refused:
        SubmitStreamingJobOperator(task_id="no_image", job_spec=spec, **common).execute(
            cast(Context, {})
        )
    assert "cannot start its driver" in str(refused.value)
    # The submit took its Job away: nothing of it is left in the namespace.
    assert [j for j in job_body(api)["items"] if "k8s-no-image" in j["metadata"]["name"]] == []

    # A namespace where only the Airflow side's RBAC was applied: no driver service account.
    bare = "kafkaspark-bare"
    prepare_namespace(k8s.kubeconfig, bare, manifests=("airflow-rbac.yaml",))
    kubeconfig = account_kubeconfig(k8s.kubeconfig, bare, tmp_path / "bare.kubeconfig")
    monkeypatch.setenv(
        "AIRFLOW_CONN_KUBE_BARE",
        json.dumps({"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}}),
    )
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_BARE",
        json.dumps(
            {
                "conn_type": "spark",
                "host": f"k8s://{k8s.server}",
                "extra": {"deploy-mode": "cluster", "namespace": bare},
            }
        ),
    )
    spec["spark_conf"] = spark_conf(k8s)
    spec["job_name"] = "k8s_bare"
    bare_conns = {**common, "spark_conn_id": "spark_bare", "kubernetes_conn_id": "kube_bare"}
    with pytest.raises(AirflowFailException, match="no service account 'kafkaspark-driver'"):
        SubmitStreamingJobOperator(task_id="bare", job_spec=spec, **bare_conns).execute(
            cast(Context, {})
        )
    assert job_body(api, bare)["items"] == []
