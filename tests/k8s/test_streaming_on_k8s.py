"""The streaming job's lifecycle with its driver as the pod of a Kubernetes Job, through the
Airflow operators, a `spark` connection (a k8s:// master, deploy-mode cluster, a namespace)
and a `kubernetes` connection (the cluster's kubeconfig): submit, the Job restarting a killed
driver, a restart window with a partition added while the job is down (stop with savepoint,
restore as a new Job), and a stop; Kafka and S3 on the cluster's bridge, where pods reach
them; the sink's output read `read_committed` for duplicates and missing counts. Besides: a
bad job fails its Job at once (no restart), and a missing image fails the submit.

The figures (submit to first committed batch, the Job's restart of a killed driver, the
restart window's downtime) are printed and written to `k8s_figures.json` in the test's
folder."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, cast

import pytest
from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_kafkaspark.backends import driver_status
from airflow_provider_kafkaspark.core.cluster.job_ref import KubernetesJobRef, job_ref_from_dict
from airflow_provider_kafkaspark.core.health.observe import caught_up, end_offsets
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
from airflow_provider_kafkaspark.examples.access_events import (
    AccessEvent,
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.examples.ip_count import (
    expected_counts,
    job_spec_dict,
    sink_windows,
)
from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator
from airflow_provider_kafkaspark.operators.submit import (
    RestoreStreamingJobOperator,
    SubmitStreamingJobOperator,
)
from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor
from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import LocalS3Server
from tests.cluster.yarn_apps import wait
from tests.integration.kafka_util import create_topic, read_all_values
from tests.k8s.k8s_stack import (
    BUCKET,
    NAMESPACE,
    OutletEvents,
    add_partition,
    committed,
    driver_pids,
    job_body,
    job_pods,
    kube_api,
    lease_owner,
    spark_conf,
)

SOURCE, SINK = "k8s_source", "k8s_sink"


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
    spec = job_spec_dict(
        bootstrap_servers="from-connection:9092",
        checkpoint=checkpoint,
        job_name="k8s_ip_count",
        source_topic=SOURCE,
        sink_topic=SINK,
        trigger_interval="2 seconds",
        max_offsets_per_trigger=600,
    )
    spec["spark_conf"] = spark_conf(k8s)
    spec["lease_ttl_s"] = 20
    common: dict[str, Any] = {
        "job_spec": spec,
        "kafka_conn_id": "kafka_k8s",
        "spark_conn_id": "spark_k8s",
        "kubernetes_conn_id": "kube_k8s",
        "aws_conn_id": "s3_k8s",
        "workdir": str(tmp_path / "jobs"),
        "max_restarts": 3,
    }
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
        (pid,) = driver_pids()
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
            lambda: caught_up(
                CheckpointReader(checkpoint).position(), end_offsets(kafka, [SOURCE])
            ),
            bool,
            300,
        )

    def stop(task_id: str, job_handle: dict[str, Any]) -> dict[str, Any]:
        context: dict[str, Any] = {"outlet_events": defaultdict(OutletEvents)}
        return StopStreamingJobOperator(
            task_id=task_id,
            savepoint_root=savepoints,
            handle=job_handle,
            aws_conn_id="s3_k8s",
            deferrable=False,
            poll_interval_s=0.5,
        ).execute(cast(Context, context))

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
    with s3_options_scope(s3):
        wait(
            "the flush event read",
            lambda: caught_up(
                CheckpointReader(checkpoint).position(), end_offsets(kafka, [SOURCE])
            ),
            bool,
            300,
        )
    assert stop("stop_again", restored)["stopped"]["clean"] is True

    counts, duplicates = sink_windows(read_all_values(bootstrap, SINK, 3))
    expected = expected_counts(events, closed_before_ms=flush_ms - 10_000)
    missing = sum(1 for k in expected if k not in counts)
    figures.update(duplicates=duplicates, missing=missing, windows=len(expected))
    (tmp_path / "k8s_figures.json").write_text(json.dumps(figures, indent=2))
    print("Kubernetes figures:", json.dumps(figures))
    assert duplicates == 0 and missing == 0
    assert counts == expected


def test_a_bad_job_and_a_missing_image_end_at_once(
    connections: None,
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
    common: dict[str, Any] = {
        "kafka_conn_id": "kafka_k8s",
        "spark_conn_id": "spark_k8s",
        "kubernetes_conn_id": "kube_k8s",
        "aws_conn_id": "s3_k8s",
        "workdir": str(tmp_path / "jobs"),
        "max_restarts": 3,
    }
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
