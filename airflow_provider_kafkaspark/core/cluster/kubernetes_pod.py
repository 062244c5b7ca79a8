"""The driver pod's shape from Spark's own settings, as spark-submit's Kubernetes cluster mode
shapes a driver pod (its BasicDriverFeatureStep and pod template step), so that the settings a
platform team already uses mean the same here: resources from `spark.driver.*` and
`spark.kubernetes.driver.{request,limit}.cores`, node selectors, labels, annotations, pull
secrets, the scheduler's name, and a pod template file (`spark.kubernetes.driver.
podTemplateFile`) for what Spark has no setting for (tolerations, affinity, priority class,
security context, sidecars). Executors are Spark's own: the driver creates their pods from
the same settings."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_kafkaspark.errors import InvalidInputError

MEMORY_OVERHEAD_MIN_MIB = 384
# Spark's default overhead factor for a Python (non-JVM) application: its Python processes
# live beside the JVM in the same container.
NON_JVM_OVERHEAD_FACTOR = 0.4
DRIVER_TEMPLATE_KEY = "spark.kubernetes.driver.podTemplateFile"
DRIVER_TEMPLATE_CONTAINER_KEY = "spark.kubernetes.driver.podTemplateContainerName"
EXECUTOR_TEMPLATE_KEY = "spark.kubernetes.executor.podTemplateFile"
TEMPLATE_KEYS = (DRIVER_TEMPLATE_KEY, EXECUTOR_TEMPLATE_KEY)
PULL_SECRETS_KEY = "spark.kubernetes.container.image.pullSecrets"
# Where a shipped executor pod template is in the driver pod (the ConfigMap's folder).
EXECUTOR_TEMPLATE_FILE = "executor-pod-template.yaml"

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)(b?)\s*$", re.IGNORECASE)
_UNIT_MIB = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024**2, "p": 1024**3}
_CPU = re.compile(r"^\s*(\d+(\.\d+)?|\.\d+)(m?)\s*$")


@dataclass(frozen=True)
class DriverPodShape:
    """What the Job's pod template gets beyond the driver itself."""

    resources: dict[str, dict[str, str]] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    image_pull_secrets: tuple[str, ...] = ()
    scheduler_name: str | None = None
    template: dict[str, Any] | None = None
    """The driver pod template (a Pod, parsed), or None."""
    template_container: str | None = None


def size_mib(value: str, key: str, job_name: str) -> int:
    """A Spark memory size in MiB, as Spark reads `spark.driver.memory` (a bare number is
    MiB; k, m, g, t, p with an optional b; a lone b is bytes)."""
    found = _SIZE.match(str(value))
    if found is None:
        raise InvalidInputError(
            f"job {job_name}: {key} must be a size such as 2g or 512m, got {value!r}"
        )
    number, unit, byte = int(found.group(1)), found.group(2).lower(), found.group(3)
    if not unit:
        return number // (1024 * 1024) if byte else number
    return int(number * _UNIT_MIB[unit])


def cpu_quantity(value: str, key: str, job_name: str) -> str:
    """A CPU quantity as Kubernetes takes it (``1``, ``0.5``, ``500m``)."""
    text = str(value).strip()
    if not _CPU.match(text):
        raise InvalidInputError(
            f"job {job_name}: {key} must be a CPU quantity such as 1, 0.5 or 500m, got {value!r}"
        )
    return text


def prefixed(conf: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The settings under `prefix`, keyed by the rest of their name."""
    return {
        k[len(prefix) :]: str(v)
        for k, v in conf.items()
        if k.startswith(prefix) and k[len(prefix) :]
    }


def driver_resources(conf: Mapping[str, str], job_name: str) -> dict[str, dict[str, str]]:
    """Requests and limits of the driver container, as Spark sets them: CPU requested from
    `spark.kubernetes.driver.request.cores` else `spark.driver.cores` (1), limited by
    `spark.kubernetes.driver.limit.cores` when set; memory requested and limited at
    `driver_memory_mib`; `spark.driver.resource.<name>.amount` with its vendor as a limit."""
    request_key = "spark.kubernetes.driver.request.cores"
    if not conf.get(request_key):
        request_key = "spark.driver.cores"
    cpu = cpu_quantity(conf.get(request_key) or "1", request_key, job_name)
    memory = f"{driver_memory_mib(conf, job_name)}Mi"
    limits = {"memory": memory}
    limit_key = "spark.kubernetes.driver.limit.cores"
    if conf.get(limit_key):
        limits["cpu"] = cpu_quantity(conf[limit_key], limit_key, job_name)
    for name, amount in prefixed(conf, "spark.driver.resource.").items():
        resource = name.removesuffix(".amount")
        vendor = conf.get(f"spark.driver.resource.{resource}.vendor")
        if name.endswith(".amount") and vendor:
            limits[f"{vendor}/{resource}"] = amount
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": limits}


def driver_memory_mib(conf: Mapping[str, str], job_name: str) -> int:
    """`spark.driver.memory` (1g) plus its overhead: `spark.driver.memoryOverhead`, else the
    larger of `spark.driver.minMemoryOverhead` (384 MiB) and the overhead factor (0.4 for a
    Python application) times the memory."""

    def size(key: str, default: str) -> int:
        return size_mib(conf.get(key) or default, key, job_name)

    memory = size("spark.driver.memory", "1g")
    if conf.get("spark.driver.memoryOverhead"):
        return memory + size("spark.driver.memoryOverhead", "0")
    factor = NON_JVM_OVERHEAD_FACTOR
    for key in ("spark.driver.memoryOverheadFactor", "spark.kubernetes.memoryOverheadFactor"):
        if conf.get(key):
            factor = _fraction(conf[key], key, job_name)
            break
    minimum = size("spark.driver.minMemoryOverhead", f"{MEMORY_OVERHEAD_MIN_MIB}m")
    return memory + max(int(factor * memory), minimum)


def _fraction(value: str, key: str, job_name: str) -> float:
    try:
        factor = float(value)
    except ValueError:
        factor = -1.0
    if factor <= 0:
        raise InvalidInputError(f"job {job_name}: {key} must be a number above 0, got {value!r}")
    return factor


def parse_pod_template(text: str, where: str, job_name: str) -> dict[str, Any]:
    """A pod template file's Pod (YAML or JSON), refused with a message naming the file when
    it is not one."""
    import yaml

    try:
        pod = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInputError(f"job {job_name}: pod template {where}: not YAML: {exc}") from exc
    if not isinstance(pod, dict) or not isinstance(pod.get("spec", {}), dict):
        raise InvalidInputError(
            f"job {job_name}: pod template {where}: not a Pod (a mapping with a spec)"
        )
    if pod.get("kind", "Pod") != "Pod":
        raise InvalidInputError(
            f"job {job_name}: pod template {where}: kind {pod.get('kind')!r}, expected Pod"
        )
    return pod


def driver_pod_shape(
    conf: Mapping[str, str], job_name: str, template: dict[str, Any] | None = None
) -> DriverPodShape:
    """The shape Spark's settings `conf` give the driver pod (`template`: the parsed driver
    pod template, read by the caller from `spark.kubernetes.driver.podTemplateFile`)."""
    secrets = tuple(
        s.strip() for s in str(conf.get(PULL_SECRETS_KEY) or "").split(",") if s.strip()
    )
    return DriverPodShape(
        resources=driver_resources(conf, job_name),
        node_selector={
            **prefixed(conf, "spark.kubernetes.node.selector."),
            **prefixed(conf, "spark.kubernetes.driver.node.selector."),
        },
        labels=prefixed(conf, "spark.kubernetes.driver.label."),
        annotations=prefixed(conf, "spark.kubernetes.driver.annotation."),
        image_pull_secrets=secrets,
        scheduler_name=(
            conf.get("spark.kubernetes.driver.scheduler.name")
            or conf.get("spark.kubernetes.scheduler.name")
            or None
        ),
        template=template,
        template_container=conf.get(DRIVER_TEMPLATE_CONTAINER_KEY) or None,
    )


def shaped_pod(pod: dict[str, Any], container_name: str, shape: DriverPodShape) -> dict[str, Any]:
    """The Job's pod template `pod` ({metadata, spec} with the driver container named
    `container_name`) on top of the shape's template, with the shape's settings: what this
    package sets wins, the template keeps everything else (its other containers, volumes,
    tolerations and affinity included), as Spark merges a pod template."""
    base = copy.deepcopy(shape.template or {})
    meta = base.get("metadata") or {}
    spec = base.get("spec") or {}
    ours_meta, ours_spec = pod["metadata"], pod["spec"]
    ours = ours_spec["containers"][0]
    containers = list(spec.get("containers") or [])
    index = _template_container(containers, shape.template_container)
    given = containers.pop(index) if index is not None else {}
    driver = {**given, **{k: v for k, v in ours.items() if k not in ("env", "volumeMounts")}}
    driver["name"] = container_name
    driver["env"] = [*(given.get("env") or []), *(ours.get("env") or [])]
    driver["volumeMounts"] = [*(given.get("volumeMounts") or []), *(ours.get("volumeMounts") or [])]
    resources = given.get("resources") or {}
    driver["resources"] = {
        kind: {**(resources.get(kind) or {}), **shape.resources.get(kind, {})}
        for kind in ("requests", "limits")
        if resources.get(kind) or shape.resources.get(kind)
    }
    merged_spec = {
        **spec,
        **{k: v for k, v in ours_spec.items() if k not in ("containers", "volumes", "tolerations")},
    }
    merged_spec["containers"] = [driver, *containers]
    merged_spec["volumes"] = [*(spec.get("volumes") or []), *(ours_spec.get("volumes") or [])]
    merged_spec["tolerations"] = [
        *(spec.get("tolerations") or []),
        *(ours_spec.get("tolerations") or []),
    ]
    if shape.node_selector:
        merged_spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **shape.node_selector}
    if shape.image_pull_secrets:
        names = [s.get("name") for s in spec.get("imagePullSecrets") or []]
        merged_spec["imagePullSecrets"] = [
            *(spec.get("imagePullSecrets") or []),
            *({"name": n} for n in shape.image_pull_secrets if n not in names),
        ]
    if shape.scheduler_name:
        merged_spec["schedulerName"] = shape.scheduler_name
    merged_meta = {
        "labels": {**(meta.get("labels") or {}), **shape.labels, **ours_meta.get("labels", {})},
        "annotations": {
            **(meta.get("annotations") or {}),
            **shape.annotations,
            **ours_meta.get("annotations", {}),
        },
    }
    return {"metadata": merged_meta, "spec": merged_spec}


def _template_container(containers: list[dict[str, Any]], name: str | None) -> int | None:
    """Which of a template's containers is the driver's: the one named, else the first."""
    if not containers:
        return None
    if name:
        for i, container in enumerate(containers):
            if container.get("name") == name:
                return i
    return 0
