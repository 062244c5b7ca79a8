"""A driver on Kubernetes as a batch/v1 Job, written and read as plain dicts (no client here).

Why a Job and not a bare driver pod (spark-submit's cluster mode) or a SparkApplication (the
spark-operator): a Job is Kubernetes' own restart policy, and its `podFailurePolicy` decides on
the driver's exit code. A clean stop (exit 0) completes the Job; the final exits (a bad job,
a driver that found the lease held, a standby nobody handed over to) fail it at once; a crash
is retried up to `backoffLimit` with the Job controller's own back-off; a pod disrupted by
its node (eviction, node loss, preemption) is replaced without using up a retry. The operator's
`OnFailure` policy retries a bad job too, and a bare pod is not restarted at all.

The driver runs Spark in client mode inside its pod, with executors as pods of their own (the
in-cluster API server from the pod's environment), so a restarted driver pod on any node is
the same driver: everything it reads travels in the submit's ConfigMap (code) and Secret (the
spec, which may hold Kafka client secrets, and the storage credentials)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_kafkaspark.core.cluster.kubernetes_pod import (
    NON_JVM_OVERHEAD_FACTOR,
    DriverPodShape,
    driver_pod_shape,
    shaped_pod,
)
from airflow_provider_kafkaspark.core.cluster.restart import FINAL_EXITS, RestartPolicy
from airflow_provider_kafkaspark.errors import InvalidInputError

MANAGED_BY = "airflow-provider-kafkaspark"
ANNOTATION_JOB = "kafkaspark.apache.org/job-name"
ANNOTATION_CHECKPOINT = "kafkaspark.apache.org/checkpoint"
LABEL_RUN = "kafkaspark.apache.org/run"
CONTAINER = "driver"
JOB_FILES = "/opt/kafkaspark/job"
SPEC_FILES = "/opt/kafkaspark/spec"
SPEC_KEY = "job.spec.json"
# The driver's Job and pod, for its lease (`core/control/lease.later_attempt`).
JOB_UID_ENV = "KAFKASPARK_JOB_UID"
POD_UID_ENV = "KAFKASPARK_POD_UID"
# A ConfigMap holds at most 1 MiB; the provider's code is about a quarter of that.
CONFIG_MAP_LIMIT = 1_000_000

IMAGE_KEY = "spark.kubernetes.container.image"
PULL_POLICY_KEY = "spark.kubernetes.container.image.pullPolicy"
SERVICE_ACCOUNT_KEY = "spark.kubernetes.authenticate.driver.serviceAccountName"
# Not Spark's own: how fast a job gives up a lost node is the job's latency choice, so it
# travels with the spec (a restore keeps it) like the image does.
NODE_LOST_KEY = "spark.kafkaspark.kubernetes.nodeLostAfterSeconds"
DEFAULT_SERVICE_ACCOUNT = "kafkaspark-driver"

_NOT_DNS = re.compile(r"[^a-z0-9-]+")


def resource_name(job_name: str, token: str) -> str:
    """A name for the submit's Job, ConfigMap and Secret: the job's name as a DNS label (the
    Job controller appends 6 characters for its pods, and Spark a suffix for executor pods),
    made unique by `token`."""
    base = _NOT_DNS.sub("-", job_name.lower()).strip("-")[:40].strip("-") or "job"
    if not base[0].isalpha():
        base = f"j-{base}"[:40]
    return f"{base}-{token}"


@dataclass(frozen=True)
class DriverPodSettings:
    """What a driver pod needs besides the job: where it runs (namespace, image, service
    account), how a lost node is given up (seconds a pod stays bound to a node that stopped
    answering before Kubernetes evicts it; Kubernetes' default is 300), and its shape from
    Spark's settings (resources, placement, metadata, pull secrets, a pod template)."""

    namespace: str
    image: str
    service_account: str = DEFAULT_SERVICE_ACCOUNT
    pull_policy: str = "IfNotPresent"
    python: str = "python3"
    node_lost_after_s: int = 300
    shape: DriverPodShape = field(default_factory=DriverPodShape)

    @classmethod
    def from_spark_conf(
        cls,
        conf: Mapping[str, str],
        namespace: str,
        *,
        job_name: str,
        template: dict[str, Any] | None = None,
    ) -> DriverPodSettings:
        """The settings from the job's Spark settings, under Spark's own names (`template`:
        the parsed `spark.kubernetes.driver.podTemplateFile`, which the caller reads)."""
        image = str(conf.get(IMAGE_KEY) or "").strip()
        if not image:
            raise InvalidInputError(
                f"job {job_name}: a driver on Kubernetes needs its image in the spec's "
                f"spark_conf as {IMAGE_KEY!r} (an image with Java, Spark and the driver's "
                f"Python packages; see docs/production-kubernetes.md)"
            )
        python = conf.get("spark.pyspark.driver.python") or conf.get("spark.pyspark.python")
        return cls(
            namespace=namespace,
            image=image,
            service_account=str(conf.get(SERVICE_ACCOUNT_KEY) or DEFAULT_SERVICE_ACCOUNT),
            pull_policy=str(conf.get(PULL_POLICY_KEY) or "IfNotPresent"),
            python=str(python or "python3"),
            node_lost_after_s=_seconds(conf.get(NODE_LOST_KEY), job_name),
            shape=driver_pod_shape(conf, job_name, template),
        )


def _seconds(given: str | None, job_name: str) -> int:
    if given is None or not str(given).strip():
        return DriverPodSettings.node_lost_after_s
    try:
        seconds = int(str(given).strip())
    except ValueError:
        seconds = -1
    if seconds < 0:
        raise InvalidInputError(
            f"job {job_name}: {NODE_LOST_KEY} must be whole seconds >= 0, got {given!r}"
        )
    return seconds


def failure_policy() -> dict[str, Any]:
    """The Job's `podFailurePolicy`: the driver's final exits fail the Job (never restarted),
    a disruption is not counted, any other failure is (up to `backoffLimit`)."""
    final = sorted(FINAL_EXITS - {0})
    return {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": CONTAINER, "operator": "In", "values": final},
            },
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        ]
    }


def backoff_limit(policy: RestartPolicy | None) -> int:
    """Retries of a crashed driver. The Job controller's back-off (10 s doubling to 6 min) is
    its own, and it has no window: `window_s` and the policy's back-off do not apply here."""
    return 0 if policy is None else policy.max_restarts


def submit_args(shipped: Sequence[str]) -> str:
    """`PYSPARK_SUBMIT_ARGS` of the driver: what only the pod knows, its address and name,
    from the downward API, and the in-cluster API server (expanded by the kubelet)."""
    args = [
        "--master",
        "k8s://https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)",
        "--deploy-mode",
        "client",
        "--conf",
        "spark.driver.host=$(KAFKASPARK_POD_IP)",
        "--conf",
        "spark.kubernetes.driver.pod.name=$(KAFKASPARK_POD_NAME)",
    ]
    if shipped:
        args += ["--py-files", ",".join(f"{JOB_FILES}/{name}" for name in shipped)]
    return shlex.join([*args, "pyspark-shell"])


# Executors run Python workers beside their JVM: spark-submit's cluster mode gives them the
# non-JVM overhead factor unless a setting says otherwise; a driver in client mode would not.
_EXECUTOR_OVERHEAD_KEYS = (
    "spark.executor.memoryOverhead",
    "spark.executor.memoryOverheadFactor",
    "spark.kubernetes.memoryOverheadFactor",
)


def driver_spark_conf(
    settings: DriverPodSettings,
    name: str,
    env_names: Sequence[str] = (),
    given: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Spark settings the shipped spec gains so that its executors are pods of the same
    image, namespace and service account, named after the submit, with the driver's
    credentials from the submit's Secret (by reference: no value in Spark's settings), and
    the memory overhead a Python application's executors get from spark-submit (unless the
    job's settings `given` name one)."""
    conf = {
        "spark.kubernetes.namespace": settings.namespace,
        IMAGE_KEY: settings.image,
        PULL_POLICY_KEY: settings.pull_policy,
        SERVICE_ACCOUNT_KEY: settings.service_account,
        "spark.kubernetes.executor.podNamePrefix": name,
    }
    for key in env_names:
        conf[f"spark.kubernetes.executor.secretKeyRef.{key}"] = f"{name}:{key}"
    if not any((given or {}).get(key) for key in _EXECUTOR_OVERHEAD_KEYS):
        conf["spark.executor.memoryOverheadFactor"] = str(NON_JVM_OVERHEAD_FACTOR)
    return conf


def job_manifest(
    *,
    name: str,
    job_name: str,
    checkpoint: str,
    shipped: Sequence[str],
    env_names: Sequence[str],
    settings: DriverPodSettings,
    policy: RestartPolicy | None,
) -> dict[str, Any]:
    """The Job, created suspended: its ConfigMap (code) and Secret (spec and the variables
    `env_names`) are written once it exists (they name it as their owner, so they go when it
    goes), then it is resumed."""
    labels = {"app.kubernetes.io/managed-by": MANAGED_BY, LABEL_RUN: name}
    annotations = {ANNOTATION_JOB: job_name, ANNOTATION_CHECKPOINT: checkpoint}
    env: list[dict[str, Any]] = [
        _field_env("KAFKASPARK_POD_NAME", "metadata.name"),
        _field_env("KAFKASPARK_POD_IP", "status.podIP"),
        _field_env(POD_UID_ENV, "metadata.uid"),
        _field_env(JOB_UID_ENV, "metadata.labels['batch.kubernetes.io/controller-uid']"),
        {"name": "PYTHONPATH", "value": ":".join(f"{JOB_FILES}/{n}" for n in shipped)},
        {"name": "PYSPARK_SUBMIT_ARGS", "value": submit_args(shipped)},
        *(
            {"name": key, "valueFrom": {"secretKeyRef": {"name": name, "key": key}}}
            for key in env_names
        ),
    ]
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": settings.image,
        "imagePullPolicy": settings.pull_policy,
        # Arguments, not a command: the image's entrypoint (the tier's image and the
        # examples' Dockerfile run it under tini) stays in front.
        "args": [
            settings.python,
            "-m",
            "airflow_provider_kafkaspark.spark.runner",
            "--spec",
            f"{SPEC_FILES}/{SPEC_KEY}",
        ],
        "env": env,
        "volumeMounts": [
            {"name": "job-code", "mountPath": JOB_FILES, "readOnly": True},
            {"name": "job-spec", "mountPath": SPEC_FILES, "readOnly": True},
        ],
    }
    lost = [
        {
            "key": key,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": settings.node_lost_after_s,
        }
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
    ]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": settings.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "suspend": True,
            "backoffLimit": backoff_limit(policy),
            "podFailurePolicy": failure_policy(),
            "template": shaped_pod(
                {
                    "metadata": {"labels": labels, "annotations": annotations},
                    "spec": {
                        "restartPolicy": "Never",
                        "serviceAccountName": settings.service_account,
                        "tolerations": lost,
                        "containers": [container],
                        "volumes": [
                            {"name": "job-code", "configMap": {"name": name}},
                            {
                                "name": "job-spec",
                                "secret": {
                                    "secretName": name,
                                    "items": [{"key": SPEC_KEY, "path": SPEC_KEY}],
                                    "defaultMode": 0o400,
                                },
                            },
                        ],
                    },
                },
                CONTAINER,
                settings.shape,
            ),
        },
    }


def _field_env(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def owner_reference(job: Mapping[str, Any]) -> dict[str, Any]:
    """An owner reference to the created Job (its ConfigMap and Secret are collected with it)."""
    meta = job["metadata"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": False,
        "blockOwnerDeletion": False,
    }


def check_config_map_size(files: Mapping[str, bytes], job_name: str) -> None:
    """A ConfigMap over 1 MiB is refused by the API server with a message naming no file."""
    total = sum(len(data) for data in files.values())
    if total > CONFIG_MAP_LIMIT:
        sizes = ", ".join(f"{name} {len(data)} B" for name, data in sorted(files.items()))
        raise InvalidInputError(
            f"job {job_name}: the files a Kubernetes submit ships ({sizes}) add up to "
            f"{total} bytes, over a ConfigMap's {CONFIG_MAP_LIMIT}: put large python_path "
            f"entries on the job's storage (s3://...) instead of shipping them"
        )


@dataclass(frozen=True)
class JobState:
    """What a Job's status says of its driver: alive while the Job has not finished (a pod
    runs, or the controller will start another), and in Kubernetes' own words."""

    alive: bool
    state: str
    reason: str = ""


def job_state(status: Mapping[str, Any] | None) -> JobState:
    """The driver's state from a Job's `status` (a dict as the API server returns it)."""
    status = status or {}
    conditions = {
        str(c.get("type")): c
        for c in status.get("conditions") or []
        if str(c.get("status")) == "True"
    }
    for kind in ("Complete", "Failed"):
        if kind in conditions:
            return JobState(False, kind, str(conditions[kind].get("reason") or ""))
    for kind in ("SuccessCriteriaMet", "FailureTarget"):
        # Decided, with pods still terminating: a driver may still hold its lease.
        if kind in conditions:
            return JobState(
                bool(status.get("active") or status.get("terminating")),
                kind,
                str(conditions[kind].get("reason") or ""),
            )
    if "Suspended" in conditions and not status.get("active"):
        return JobState(False, "Suspended", str(conditions["Suspended"].get("reason") or ""))
    return JobState(True, "Running" if status.get("active") else "Pending")


# Waiting reasons a driver pod never gets past by itself: the image is not on the node (and
# may not be pulled) or is not an image name, or the pod names what its namespace lacks.
_CANNOT_START = {
    "ErrImageNeverPull": "its image is not on the node and the pull policy is Never",
    "InvalidImageName": "its image name is not valid",
    "CreateContainerConfigError": "its container cannot be configured",
}
_PULL_FAILED = ("ErrImagePull", "ImagePullBackOff")
_NOT_FOUND = ("not found", "manifest unknown", "does not exist", "repository does not exist")


@dataclass(frozen=True)
class DriverStart:
    """How far the newest driver pod of a Job got: `started` once its container ran (or
    ended), `problem` when it never will (a message naming the pod and the reason)."""

    started: bool
    problem: str | None = None


def driver_start(pods: Sequence[Mapping[str, Any]]) -> DriverStart:
    """The start of the newest of a Job's pods (dicts as the API server returns them)."""
    if not pods:
        return DriverStart(False)
    pod = max(pods, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp") or ""))
    name = (pod.get("metadata") or {}).get("name")
    status = pod.get("status") or {}
    if status.get("phase") in ("Running", "Succeeded", "Failed"):
        return DriverStart(True)
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        if "running" in state or "terminated" in state:
            return DriverStart(True)
        waiting = state.get("waiting") or {}
        reason, message = str(waiting.get("reason") or ""), str(waiting.get("message") or "")
        image = container.get("image")
        if reason in _CANNOT_START:
            return DriverStart(
                False, f"pod {name}: {_CANNOT_START[reason]} (image {image}): {message[:300]}"
            )
        if reason in _PULL_FAILED and any(s in message.lower() for s in _NOT_FOUND):
            return DriverStart(False, f"pod {name}: image {image} not found: {message[:300]}")
    return DriverStart(False)
