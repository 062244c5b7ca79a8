"""Drivers as pods of a Kubernetes Job (`core/cluster/kubernetes_job.py` says why a Job), on
the API server of the cncf-kubernetes provider's `kubernetes` connection, through its
KubernetesHook and the official `kubernetes` client.

A submit writes three objects of one name in the namespace the `spark` connection's extra
`namespace` gives: the Job (created suspended), a ConfigMap with the code the driver imports
(the provider's code as a zip, the job's shipped `python_path` entries) and a Secret with the
job spec the driver reads (mounted as a file; the spec's own secrets left out) and, as
variables, those secrets and the storage credentials. The ConfigMap and Secret are owned by
the Job, so deleting it removes all three. The reference holds the Job's namespace,
name and uid: status and kill read the Job under that name and act only when its uid and its
job annotation match. Status, kill and the Job's restart policy need no host of the submit:
any host with API access acts on the reference."""

from __future__ import annotations

import dataclasses
import logging
import secrets
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.backends.base import (
    JobStatus,
    SubmitOptions,
    Submitted,
    shippable,
)
from airflow_provider_kafkaspark.core.cluster import kubernetes_job as manifest
from airflow_provider_kafkaspark.core.cluster import kubernetes_pod as pods
from airflow_provider_kafkaspark.core.cluster.job_ref import (
    JobRef,
    KubernetesJobRef,
    check_kubernetes_job,
    require_backend,
)
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import (
    ClusterUnavailableError,
    InvalidInputError,
    JobNotFoundError,
)

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

DEFAULT_NAMESPACE = "default"
# The label the Job controller puts on its pods: the Job's uid.
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
log = logging.getLogger(__name__)


class KubernetesBackend:
    """Submit needs the namespace (the `spark` connection's extra `namespace`) and API access
    (the `kubernetes` connection `kubernetes_conn_id`; without one, the cncf provider's
    default: the `kubernetes_default` connection if defined, else the kubeconfig of this host
    or the pod's own service account)."""

    name = "kubernetes"

    def __init__(
        self,
        *,
        kubernetes_conn_id: str | None = None,
        spark_conn_id: str | None = None,
        namespace: str | None = None,
        node_lost_after_s: int | None = None,
        start_timeout_s: float = 120.0,
        api: ApiClient | None = None,
    ) -> None:
        self.kubernetes_conn_id = kubernetes_conn_id
        self.spark_conn_id = spark_conn_id
        self._namespace = namespace
        self.node_lost_after_s = node_lost_after_s
        self.start_timeout_s = start_timeout_s
        self._api = api

    # -- API access ---------------------------------------------------------------------

    @property
    def api(self) -> ApiClient:
        if self._api is None:
            from airflow.providers.cncf.kubernetes.hooks.kubernetes import KubernetesHook

            hook = KubernetesHook(
                kubernetes_conn_id=self.kubernetes_conn_id or KubernetesHook.default_conn_name
            )
            try:
                self._api = hook.get_conn()
            except Exception as exc:  # the kubeconfig loaders raise several kinds
                raise ClusterUnavailableError(
                    f"no Kubernetes API access from "
                    f"{self._access()}: {type(exc).__name__}: {str(exc)[:200]}"
                ) from exc
        return self._api

    def _access(self) -> str:
        if self.kubernetes_conn_id:
            return f"kubernetes connection {self.kubernetes_conn_id!r}"
        return "the default kubernetes connection or kubeconfig"

    def namespace(self) -> str:
        """The namespace given, else the `spark` connection's extra `namespace` (the key the
        official Spark hook reads for `spark.kubernetes.namespace`), else `default`."""
        if self._namespace:
            return self._namespace
        if self.spark_conn_id:
            from airflow.sdk import BaseHook

            extra = BaseHook.get_connection(self.spark_conn_id).extra_dejson
            given = str(extra.get("namespace") or "").strip()
            if given:
                return given
        return DEFAULT_NAMESPACE

    def api_server(self) -> str:
        return str(getattr(self.api.configuration, "host", "") or "")

    def _call(self, what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        """One API call; errors as this package's: 404 as a missing object, 401/403 as a
        refusal naming the access used, anything unreachable as an unavailable cluster."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        # Bounded: an API server that does not answer must not hold a task for the OS's
        # connect timeout (connect, read seconds).
        kwargs.setdefault("_request_timeout", (10, 60))
        try:
            return call(*args, **kwargs)
        except ApiException as exc:
            if exc.status == 404:
                raise JobNotFoundError(f"{what}: not found (HTTP 404)") from exc
            if exc.status in (401, 403):
                raise InvalidInputError(
                    f"{what}: refused to {self._access()} (HTTP {exc.status}): {_message(exc)}"
                ) from exc
            if exc.status == 422 or exc.status == 400:
                raise InvalidInputError(f"{what}: {_message(exc)}") from exc
            raise ClusterUnavailableError(f"{what}: HTTP {exc.status}: {_message(exc)}") from exc
        except (HTTPError, OSError) as exc:
            raise ClusterUnavailableError(
                f"{what}: the API server {self.api_server()} does not answer: {type(exc).__name__}"
            ) from exc

    # -- submit -------------------------------------------------------------------------

    def submit(self, spec: JobSpec, options: SubmitOptions) -> Submitted:
        from kubernetes import client

        templates = pod_templates(spec)
        settings = manifest.DriverPodSettings.from_spark_conf(
            spec.spark_conf,
            self.namespace(),
            job_name=spec.job_name,
            template=templates.get(pods.DRIVER_TEMPLATE_KEY),
        )
        if self.node_lost_after_s is not None:
            settings = dataclasses.replace(settings, node_lost_after_s=self.node_lost_after_s)
        core, batch = client.CoreV1Api(self.api), client.BatchV1Api(self.api)
        where = f"namespace {settings.namespace} at {self.api_server()}"
        try:
            self._call(
                f"service account {settings.service_account!r} in {where}",
                core.read_namespaced_service_account,
                settings.service_account,
                settings.namespace,
            )
        except JobNotFoundError as exc:
            raise InvalidInputError(
                f"job {spec.job_name}: {where} has no service account "
                f"{settings.service_account!r} for its driver pods (or no such namespace): "
                f"apply the driver's RBAC there (docs/kubernetes/driver-rbac.yaml), or name "
                f"another account in {manifest.SERVICE_ACCOUNT_KEY!r}"
            ) from exc
        name = manifest.resource_name(spec.job_name, secrets.token_hex(4))
        # The Secret below holds the spec too: its secrets go apart all the same, as variables
        # the driver pod gets by name (and the spec means the same on every backend). Executors
        # get only the storage credentials: the Kafka settings reach them from the driver.
        spec, env = shippable(spec, options.env)
        code, shipped_spec = self._job_files(spec, settings, name, sorted(options.env))
        files = dict(code)
        executor_template = templates.get(pods.EXECUTOR_TEMPLATE_KEY)
        if executor_template is not None:
            # Spark's driver reads the executors' template from its own file system: the
            # file travels in the ConfigMap, and the shipped spec names it there.
            files[pods.EXECUTOR_TEMPLATE_FILE] = _b64(_yaml(executor_template))
            shipped_spec = dataclasses.replace(
                shipped_spec,
                spark_conf={
                    **shipped_spec.spark_conf,
                    pods.EXECUTOR_TEMPLATE_KEY: (
                        f"{manifest.JOB_FILES}/{pods.EXECUTOR_TEMPLATE_FILE}"
                    ),
                },
            )
        job = self._call(
            f"creating Job {name} in {where}",
            batch.create_namespaced_job,
            settings.namespace,
            manifest.job_manifest(
                name=name,
                job_name=spec.job_name,
                checkpoint=spec.checkpoint_location,
                shipped=list(code),
                env_names=sorted(env),
                settings=settings,
                policy=options.restart_policy,
            ),
        )
        body = self.api.sanitize_for_serialization(job)
        owner = manifest.owner_reference(body)
        ref = KubernetesJobRef(
            job_name=spec.job_name,
            checkpoint=spec.checkpoint_location,
            namespace=settings.namespace,
            name=name,
            uid=str(body["metadata"]["uid"]),
            api_server=self.api_server(),
        )
        try:
            self._call(
                f"creating ConfigMap {name} in {where}",
                core.create_namespaced_config_map,
                settings.namespace,
                _owned(name, settings.namespace, owner, binaryData=files),
            )
            secret = {manifest.SPEC_KEY: shipped_spec.to_json(), **env}
            self._call(
                f"creating Secret {name} in {where}",
                core.create_namespaced_secret,
                settings.namespace,
                _owned(name, settings.namespace, owner, stringData=secret),
            )
            self._call(
                f"resuming Job {name} in {where}",
                batch.patch_namespaced_job,
                name,
                settings.namespace,
                {"spec": {"suspend": False}},
            )
            self._wait_started(ref, settings.image)
        except BaseException:
            # Nothing of this submit is left half made: the Job takes its objects with it.
            self.force_kill(ref)
            raise
        details = {
            "namespace": ref.namespace,
            "kubernetes_job": name,
            "uid": ref.uid,
            "api_server": ref.api_server,
            "image": settings.image,
        }
        return Submitted(ref, details)

    def _job_files(
        self,
        spec: JobSpec,
        settings: manifest.DriverPodSettings,
        name: str,
        env_names: list[str],
    ) -> tuple[dict[str, str], JobSpec]:
        """The ConfigMap's zips (base64, as binaryData wants; in the order the driver imports
        them) and the spec the driver runs: naming the shipped zips, and with the settings
        that make its executors pods of the same image and namespace."""
        from airflow_provider_kafkaspark.backends.package_archive import (
            package_zip,
            ship_python_path,
        )

        with tempfile.TemporaryDirectory(prefix="kafkaspark-submit-") as tmp:
            folder = Path(tmp)
            shipped_spec, shipped = ship_python_path(spec, folder)
            raw = {p.name: p.read_bytes() for p in [package_zip(folder), *shipped]}
        manifest.check_config_map_size(raw, spec.job_name)
        conf = {
            **manifest.driver_spark_conf(settings, name, env_names, shipped_spec.spark_conf),
            **shipped_spec.spark_conf,
        }
        # The shipped entries by their path in the pod (the driver's working folder is the
        # image's, not the ConfigMap's).
        mounted = {p.name: f"{manifest.JOB_FILES}/{p.name}" for p in shipped}
        python_path = tuple(mounted.get(entry, entry) for entry in shipped_spec.python_path)
        shipped_spec = dataclasses.replace(shipped_spec, spark_conf=conf, python_path=python_path)
        return {key: _b64(data) for key, data in raw.items()}, shipped_spec

    def _wait_started(self, ref: KubernetesJobRef, image: str) -> None:
        """Wait, bounded, for the driver's container to start: a pod that never will (an
        image that is not there) fails the submit, not a health check an hour later. A slow
        start (a large image being pulled, a node being added) is left to the health check."""
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            start = manifest.driver_start(self._pods(ref))
            if start.started:
                return
            if start.problem is not None:
                raise InvalidInputError(
                    f"job {ref.job_name}: Kubernetes Job {ref.namespace}/{ref.name} cannot "
                    f"start its driver: {start.problem}"
                )
            if time.monotonic() >= deadline:
                log.warning(
                    "job %s: the driver pod of Kubernetes Job %s/%s has not started within "
                    "%.0fs (image %s); the health check watches it from here",
                    ref.job_name,
                    ref.namespace,
                    ref.name,
                    self.start_timeout_s,
                    image,
                )
                return
            time.sleep(1.0)

    def _pods(self, ref: KubernetesJobRef) -> list[dict[str, Any]]:
        """The driver pods of the Job `ref` names (by its uid: no other Job's)."""
        from kubernetes import client

        listed = self._call(
            f"the pods of Kubernetes Job {ref.namespace}/{ref.name}",
            client.CoreV1Api(self.api).list_namespaced_pod,
            ref.namespace,
            label_selector=f"{CONTROLLER_UID}={ref.uid}",
        )
        body: dict[str, Any] = self.api.sanitize_for_serialization(listed)
        return list(body.get("items") or [])

    # -- observe and kill ---------------------------------------------------------------

    def _kubernetes(self, ref: JobRef, action: str) -> KubernetesJobRef:
        require_backend(ref, self.name, action)
        assert isinstance(ref, KubernetesJobRef)
        return ref

    def _job(self, ref: KubernetesJobRef) -> dict[str, Any] | None:
        """The Job `ref` names as a dict, None when it is gone; refused when it is another's."""
        from kubernetes import client

        try:
            job = self._call(
                f"Kubernetes Job {ref.namespace}/{ref.name}",
                client.BatchV1Api(self.api).read_namespaced_job,
                ref.name,
                ref.namespace,
            )
        except JobNotFoundError:
            return None
        body: dict[str, Any] = self.api.sanitize_for_serialization(job)
        check_kubernetes_job(ref, body.get("metadata") or {})
        return body

    def status(self, ref: JobRef) -> JobStatus:
        own = self._kubernetes(ref, "observe")
        job = self._job(own)
        if job is None:
            return JobStatus(own.job_name, self.name, False, "gone", {"kubernetes_job": own.name})
        status = job.get("status") or {}
        state = manifest.job_state(status)
        start = manifest.driver_start(self._pods(own)) if state.alive else None
        if start is not None and start.problem is not None:
            # The Job waits for a pod that never starts: not a driver that will come.
            state = manifest.JobState(False, "CannotStart", start.problem)
        detail = {
            "namespace": own.namespace,
            "kubernetes_job": own.name,
            "reason": state.reason,
            "active": status.get("active", 0),
            "failed": status.get("failed", 0),
            "succeeded": status.get("succeeded", 0),
        }
        return JobStatus(own.job_name, self.name, state.alive, state.state, detail)

    def alive(self, ref: JobRef) -> bool | None:
        own = self._kubernetes(ref, "observe")
        job = self._job(own)
        return job is not None and manifest.job_state(job.get("status")).alive

    def force_kill(self, ref: JobRef) -> None:
        """Delete the Job (no restart follows), then its pods at once (their grace period
        would let a driver commit another batch); executor pods go with their driver pod."""
        from kubernetes import client

        own = self._kubernetes(ref, "kill")
        if self._job(own) is None:
            return
        batch, core = client.BatchV1Api(self.api), client.CoreV1Api(self.api)
        what = f"deleting Kubernetes Job {own.namespace}/{own.name}"
        body = client.V1DeleteOptions(
            propagation_policy="Background", preconditions=client.V1Preconditions(uid=own.uid)
        )
        try:
            self._call(what, batch.delete_namespaced_job, own.name, own.namespace, body=body)
        except JobNotFoundError:
            pass
        self._call(
            f"deleting the pods of Kubernetes Job {own.namespace}/{own.name}",
            core.delete_collection_namespaced_pod,
            own.namespace,
            label_selector=f"{CONTROLLER_UID}={own.uid}",
            grace_period_seconds=0,
        )


def _owned(name: str, namespace: str, owner: dict[str, Any], **data: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "ownerReferences": [owner]}, **data}


def _message(exc: Any) -> str:
    """The API server's own message of a refused call (its Status body), else the reason."""
    import json

    try:
        return str(json.loads(exc.body).get("message") or exc.reason)[:300]
    except (TypeError, ValueError, AttributeError):
        return str(exc.reason)[:300]


def pod_templates(spec: JobSpec) -> dict[str, dict[str, Any]]:
    """The pod templates the spec's Spark settings name, read from this host or the job's
    storage and parsed: a missing or unreadable file fails the submit naming the setting."""
    from airflow_provider_kafkaspark.core.storage.location import open_location
    from airflow_provider_kafkaspark.errors import StorageError

    found: dict[str, dict[str, Any]] = {}
    for key in pods.TEMPLATE_KEYS:
        given = str(spec.spark_conf.get(key) or "").strip()
        if not given:
            continue
        folder, _, name = given.rstrip("/").rpartition("/")
        try:
            text = open_location(folder or ".").read_text(name)
        except StorageError as exc:
            raise InvalidInputError(f"job {spec.job_name}: spark_conf {key}: {exc}") from exc
        found[key] = pods.parse_pod_template(text, given, spec.job_name)
    return found


def _yaml(pod: dict[str, Any]) -> bytes:
    import yaml

    return str(yaml.safe_dump(pod, sort_keys=False)).encode()


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()
