"""Job references: what a submit returns and a stop, a health check or a restore takes, one
type per deployment backend. A reference is plain data (native XCom, JSON for the CLI) and
names where the driver runs in the backend's own terms: a host and pid for a local driver,
an application id and its ResourceManager for YARN, a driver id and master for a standalone
cluster. Checks that need no I/O (is this reference well formed, may this host kill that
driver, is that YARN application this job's) are plain functions here."""

from __future__ import annotations

import re
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, ClassVar

from airflow_provider_kafkaspark.core.cluster.kubernetes_job import ANNOTATION_JOB
from airflow_provider_kafkaspark.errors import InvalidArgumentError, RefusedError

YARN_APPLICATION_ID = re.compile(r"^application_\d+_\d+$")
# A DNS label or subdomain (namespaces, Job names) or a uid: lower-case letters, digits, - .
DNS_NAME = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")


@dataclass(frozen=True)
class LocalJobRef:
    """A driver started as a detached process on `host` (local mode, or client mode). The
    launcher fills the last three; references written before they existed (and those built
    from a bare pid) leave them empty."""

    backend: ClassVar[str] = "local"
    job_name: str
    checkpoint: str
    host: str
    pid: int
    log_file: str
    master: str
    spec_file: str = ""
    started_at_ms: int = 0
    # The driver's working folder (Spark leaves artifacts/, spark-warehouse/ there).
    work_dir: str = ""


@dataclass(frozen=True)
class YarnJobRef:
    """A driver in a YARN application master (cluster deploy mode)."""

    backend: ClassVar[str] = "yarn"
    job_name: str
    checkpoint: str
    application_id: str
    # The ResourceManager's web address, http://host:8088; with ResourceManager HA each RM's,
    # comma separated (one string, so references written before HA load as they are).
    resource_manager: str


@dataclass(frozen=True)
class KubernetesJobRef:
    """A driver pod of a Kubernetes Job (the restart policy is the Job's): the Job's namespace,
    name and uid, which no other Job ever has, and the API server it was submitted to (for
    people reading it: another host may reach the same server at another address)."""

    backend: ClassVar[str] = "kubernetes"
    job_name: str
    checkpoint: str
    namespace: str
    name: str
    uid: str
    api_server: str = ""


@dataclass(frozen=True)
class StandaloneJobRef(LocalJobRef):
    """A driver on a Spark standalone cluster: a client-mode driver is a local process of
    `host`, so the reference is a local one under its own backend name."""

    backend: ClassVar[str] = "standalone"


JobRef = LocalJobRef | YarnJobRef | StandaloneJobRef | KubernetesJobRef
_TYPES: dict[str, type[JobRef]] = {
    "local": LocalJobRef,
    "yarn": YarnJobRef,
    "standalone": StandaloneJobRef,
    "kubernetes": KubernetesJobRef,
}


def job_ref_to_dict(ref: JobRef) -> dict[str, Any]:
    return {"backend": ref.backend, **asdict(ref)}


def job_ref_from_dict(raw: Any, where: str = "job reference") -> JobRef:
    """A reference from its dict form (an XCom value, a CLI argument); a clear error naming
    the field that is missing, unknown or of the wrong kind."""
    if not isinstance(raw, dict):
        raise InvalidArgumentError(f"{where}: expected an object, got {type(raw).__name__}")
    backend = raw.get("backend")
    kind = _TYPES.get(str(backend))
    if kind is None:
        raise InvalidArgumentError(
            f"{where}: backend {backend!r} is not one of {', '.join(_TYPES)}"
        )
    names = {f.name: f for f in fields(kind)}
    optional = {f.name for f in fields(kind) if f.default is not MISSING}
    missing = sorted(set(names) - optional - set(raw))
    if missing:
        raise InvalidArgumentError(f"{where}: {backend} reference lacks {', '.join(missing)}")
    unknown = sorted(set(raw) - set(names) - {"backend"})
    if unknown:
        raise InvalidArgumentError(
            f"{where}: {backend} reference has unknown fields {', '.join(unknown)}"
        )
    values = {name: raw[name] for name in names if name in raw}
    for name, value in values.items():
        wanted = int if names[name].type in ("int", int) else str
        if not isinstance(value, wanted) or isinstance(value, bool):
            raise InvalidArgumentError(f"{where}: {name} must be {wanted.__name__}, got {value!r}")
    ref: JobRef = kind(**values)
    if isinstance(ref, YarnJobRef) and not YARN_APPLICATION_ID.match(ref.application_id):
        raise InvalidArgumentError(
            f"{where}: application_id {ref.application_id!r} is not a YARN application id "
            f"(application_<cluster timestamp>_<number>)"
        )
    if isinstance(ref, KubernetesJobRef):
        for name in ("namespace", "name", "uid"):
            if not DNS_NAME.match(getattr(ref, name)):
                raise InvalidArgumentError(
                    f"{where}: {name} {getattr(ref, name)!r} is not a Kubernetes name"
                )
    return ref


def require_backend(ref: JobRef, expected: str, action: str) -> None:
    """Refuse a reference of another backend than the one asked to act on it."""
    if ref.backend != expected:
        raise InvalidArgumentError(
            f"cannot {action} job {ref.job_name}: its reference is for the {ref.backend} "
            f"backend, this is the {expected} backend"
        )


def check_local_kill(ref: LocalJobRef, this_host: str) -> None:
    """A pid means something only on the host that started it: a force kill from another host
    would signal whatever process has that number there."""
    if ref.host != this_host:
        raise RefusedError(
            f"refusing to kill job {ref.job_name}: its driver is pid {ref.pid} on host "
            f"{ref.host}, and this is host {this_host}; stop it gracefully (the stop request "
            f"goes through its checkpoint) or kill it on {ref.host}"
        )


def check_yarn_application(ref: YarnJobRef, app: dict[str, Any]) -> None:
    """The ResourceManager's record of `ref.application_id` (`/ws/v1/cluster/apps/{id}`'s
    `app`) must be this job's: same name. A reference copied from another job's run must not
    let a stop or kill reach that job."""
    name = app.get("name")
    if name != ref.job_name:
        raise RefusedError(
            f"YARN application {ref.application_id} at {ref.resource_manager} is "
            f"{name!r}, not job {ref.job_name!r}: refusing to act on it"
        )


def check_kubernetes_job(ref: KubernetesJobRef, metadata: dict[str, Any]) -> None:
    """The Job the API server returns for `ref.namespace/ref.name` must be the submit's own
    (its uid) and this job's (its annotation): a Job of the same name from another submit, or
    of another job, is not acted on."""
    where = f"Kubernetes Job {ref.namespace}/{ref.name}"
    if metadata.get("uid") != ref.uid:
        raise RefusedError(
            f"{where} has uid {metadata.get('uid')!r}, not the submit's {ref.uid!r} (a Job of "
            f"the same name from another submit): refusing to act on it"
        )
    owner = (metadata.get("annotations") or {}).get(ANNOTATION_JOB)
    if owner != ref.job_name:
        raise RefusedError(
            f"{where} runs job {owner!r}, not job {ref.job_name!r}: refusing to act on it"
        )


def ref_from_handle(
    handle: dict[str, Any] | None, *, job_name: str, checkpoint: str, host: str, where: str
) -> JobRef | None:
    """The job reference in a submit's handle (its `job_ref`), a reference itself, or, for a
    handle that names only a `pid` (older submits), a local reference on `host`. None when the
    handle names no driver. Errors name `where` and the field."""
    if handle is None:
        return None
    if "backend" in handle:
        return job_ref_from_dict(handle, where)
    if handle.get("job_ref") is not None:
        return job_ref_from_dict(handle["job_ref"], f"{where}.job_ref")
    pid = handle.get("pid")
    if pid is None or pid == "":
        return None
    if isinstance(pid, bool):
        raise InvalidArgumentError(f"{where}.pid {pid!r} is not a process id")
    try:
        number = int(pid)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{where}.pid {str(pid)[:40]!r} is not a process id") from None
    if number < 0:
        raise InvalidArgumentError(f"{where}.pid {number} is not a process id")
    if number == 0:
        return None
    return LocalJobRef(job_name, checkpoint, host, number, str(handle.get("log_file") or ""), "")


def check_ref_names(ref: JobRef, *, job_name: str, checkpoint: str, where: str) -> None:
    """A reference must name the job and checkpoint being acted on: one copied from another
    job's submit must not let this stop kill that job's driver."""
    if ref.job_name != job_name or ref.checkpoint != checkpoint:
        raise InvalidArgumentError(
            f"{where} names job {ref.job_name!r} on {ref.checkpoint}, but this task is for job "
            f"{job_name!r} on {checkpoint}"
        )
