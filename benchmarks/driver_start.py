"""Time from submit to the first committed batch, and the restart after a driver crash: the
example job (ip_count, exactly-once Kafka sink, checkpoint on S3) with its driver as a local
process (`local[2]`), in a YARN application master (cluster deploy mode) and, with
`kubernetes=1` (root, `make setup-k8s`), as the pod of a Kubernetes Job with one executor
pod, on the local Kafka, S3 server, YARN and Kubernetes, all started here (Kafka and S3 on
the Kubernetes cluster's bridge then, where pods reach them).

Each round submits through `lifecycle/submit.submit_streaming_job` (what the operators run) on a
fresh checkpoint and times:

- `submit`: the submit call itself (for YARN, spark-submit returning an application id);
- `first_commit`: submit call to the first committed batch in the checkpoint;
- `restart`: the driver SIGKILLed (the local supervisor's runner, the YARN application
  master, or the runner's Python in the driver pod) to the next committed batch of its
  restart (the local supervisor's back-off is set to 0 so all measure the restart itself;
  the Job controller's own back-off, 10 s before the first retry, is part of Kubernetes');

then stops the job gracefully. Rounds alternate the backends' order (reversed in odd rounds).
Figures: per-round values, medians per backend, and the YARN/local and Kubernetes/local
ratios of each median, taken in this run.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.backends.base import JobBackend, SubmitOptions
from airflow_provider_kafkaspark.backends.local import LocalBackend
from airflow_provider_kafkaspark.backends.yarn import YarnBackend
from airflow_provider_kafkaspark.core.cluster.job_ref import job_ref_from_dict
from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.examples.access_events import generate_events, produce_events
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from airflow_provider_kafkaspark.lifecycle.stop import stop_job
from airflow_provider_kafkaspark.lifecycle.submit import SubmitRequest, submit_streaming_job
from airflow_provider_kafkaspark.spark.local_session import spark_jars_option
from kafkaspark_devstack.drivers import pod_driver_pids
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.ports import HOST
from kafkaspark_devstack.s3 import LocalS3Server
from kafkaspark_devstack.yarn import LocalYarnCluster, application_master_pids

BUCKET = "kafkaspark-bench"
NAMESPACE = "kafkaspark-bench"


def _wait(what: str, probe: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not probe():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout_s:g}s waiting for {what}")
        time.sleep(0.5)


def _committed(checkpoint: str) -> int:
    try:
        return CheckpointReader(checkpoint).position().latest_committed or -1
    except Exception:  # noqa: BLE001 - not written yet
        return -1


def _driver_pid(backend: str, handle: dict[str, Any], checkpoint: str) -> int:
    """The process to SIGKILL: the lease holder (the Python driver) for a local job, the
    application master's JVM for YARN (the container, as a node failure would take it)."""
    if backend == "local":
        lease = ControlFolder(checkpoint).read_lease()
        assert lease is not None
        return lease.pid
    if backend == "kubernetes":
        return _pod_runner_pid()
    app = str(handle["job_ref"]["application_id"])
    found = application_master_pids(app)
    if not found:
        raise RuntimeError(f"no application master process for {app}")
    return found[0]


def _pod_runner_pid() -> int:
    found = pod_driver_pids()
    if not found:
        raise RuntimeError("no driver runner in a pod")
    return found[0]


def _round(
    backend_name: str, backend: JobBackend, spec: JobSpec, env: dict[str, str], workdir: Path
) -> dict[str, float]:
    checkpoint = spec.checkpoint_location
    request = SubmitRequest(
        spec=spec,
        kafka_client={"bootstrap.servers": spec.source.bootstrap_servers},
        options=SubmitOptions(
            workdir=str(workdir),
            submitted_by="benchmark:driver_start",
            restart_policy=RestartPolicy(max_restarts=2, backoff_s=0.0, backoff_max_s=0.0),
            env=env if backend_name != "local" else {},
        ),
        probe_bootstrap=False,
    )
    t0 = time.monotonic()
    handle = submit_streaming_job(backend, request)
    figures = {"submit": time.monotonic() - t0}
    _wait("a first commit", lambda: _committed(checkpoint) >= 0, 300)
    figures["first_commit"] = time.monotonic() - t0
    before = _committed(checkpoint)
    os.kill(_driver_pid(backend_name, handle, checkpoint), signal.SIGKILL)
    killed = time.monotonic()
    _wait("a commit after the restart", lambda: _committed(checkpoint) > before, 300)
    figures["restart"] = time.monotonic() - killed
    stop_job(
        checkpoint,
        requested_by="benchmark:driver_start",
        reason="round over",
        drain_timeout_s=60,
        ref=job_ref_from_dict(handle["job_ref"]),
    )
    return figures


def run(rounds: int = 3, events: int = 20_000, kubernetes: int = 0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kafkaspark-driver-start-") as tmp, ExitStack() as up:
        base = Path(tmp)
        host = HOST
        k8s = None
        if kubernetes:
            from kafkaspark_devstack.k8s.cluster import LocalKubernetesCluster
            from kafkaspark_devstack.k8s.namespace import account_kubeconfig, prepare_namespace

            k8s = up.enter_context(LocalKubernetesCluster(base / "k8s"))
            host = k8s.address
            prepare_namespace(k8s.kubeconfig, NAMESPACE)
            kubeconfig = account_kubeconfig(k8s.kubeconfig, NAMESPACE, base / "airflow.kubeconfig")
        kafka = up.enter_context(LocalKafkaCluster(base / "kafka", brokers=1, host=host))
        s3 = up.enter_context(LocalS3Server(base / "s3", host=host))
        yarn = up.enter_context(LocalYarnCluster(base / "yarn"))
        s3.create_bucket(BUCKET)
        aws = s3.aws_environment()
        saved = {k: os.environ.get(k) for k in [*aws, *yarn.client_environment(), "PATH"]}
        os.environ.update(aws)  # this process's S3 reads, and the local drivers'
        os.environ.update(yarn.client_environment())
        os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        extra = {"deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": yarn.web_url}
        os.environ["AIRFLOW_CONN_SPARK_BENCH"] = json.dumps(
            {"conn_type": "spark", "host": "yarn", "extra": extra}
        )
        backends: dict[str, JobBackend] = {
            "local": LocalBackend("local[2]"),
            "yarn": YarnBackend("spark_bench", jars=spark_jars_option(s3a=True)),
        }
        conf: dict[str, dict[str, str]] = {}
        if k8s is not None:
            from airflow_provider_kafkaspark.backends.kubernetes import KubernetesBackend

            # A submit names its connection; a stop acts from the reference alone, through
            # the cncf provider's default one.
            kube = {"conn_type": "kubernetes", "extra": {"kube_config_path": str(kubeconfig)}}
            for conn_id in ("KUBE_BENCH", "KUBERNETES_DEFAULT"):
                os.environ[f"AIRFLOW_CONN_{conn_id}"] = json.dumps(kube)
            backends["kubernetes"] = KubernetesBackend(
                kubernetes_conn_id="kube_bench", namespace=NAMESPACE
            )
            conf["kubernetes"] = {
                "spark.kubernetes.container.image": k8s.driver_image,
                "spark.kubernetes.container.image.pullPolicy": "Never",
                "spark.executor.instances": "1",
                "spark.kubernetes.executor.request.cores": "100m",
                "spark.kubernetes.driver.request.cores": "100m",
            }
        try:
            return _measure(base, kafka, aws, backends, conf, rounds, events)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _measure(
    base: Path,
    kafka: LocalKafkaCluster,
    aws: dict[str, str],
    backends: dict[str, JobBackend],
    conf: dict[str, dict[str, str]],
    rounds: int,
    events: int,
) -> dict[str, Any]:
    bootstrap = kafka.bootstrap_servers
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    created = admin.create_topics([NewTopic(t, 3, 1) for t in ("bench_source", "bench_sink")])
    for future in created.values():
        future.result(60)
    produce_events(bootstrap, "bench_source", list(generate_events(events, seed=5)))
    names = tuple(backends)
    per_round: list[dict[str, Any]] = []
    for i in range(rounds):
        order = names if i % 2 == 0 else tuple(reversed(names))
        for name in order:
            raw = job_spec_dict(
                bootstrap_servers=bootstrap,
                checkpoint=f"s3://{BUCKET}/round{i}-{name}/checkpoint",
                job_name=f"bench_{name}_{i}",
                source_topic="bench_source",
                sink_topic="bench_sink",
                max_offsets_per_trigger=1_000,
            )
            raw["spark_conf"] = {"spark.sql.shuffle.partitions": "2", **conf.get(name, {})}
            raw["lease_ttl_s"] = 20
            figures = _round(name, backends[name], JobSpec.from_dict(raw), aws, base / "jobs")
            per_round.append({"round": i, "backend": name, **figures})
            print(f"round {i} {name}: {figures}", file=sys.stderr, flush=True)
    medians = {
        name: {
            key: statistics.median(r[key] for r in per_round if r["backend"] == name)
            for key in ("submit", "first_commit", "restart")
        }
        for name in names
    }
    ratios = {
        f"{name}_over_local": {
            key: medians[name][key] / medians["local"][key] for key in ("first_commit", "restart")
        }
        for name in names
        if name != "local"
    }
    return {"rounds": per_round, "median_s": medians, **ratios}
