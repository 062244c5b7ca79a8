"""Whether a streaming driver may run as a local process of the host that submits it.

A local driver (`local[...]` master, no `spark` connection) outlives the task that started
it, as a process of the task's host. Where tasks run on hosts an executor picks, or in a pod
deleted when the task ends, that driver dies with the pod or sits where the next task (the
stop, the health check) cannot reach it. So it is refused there unless asked for by name."""

from __future__ import annotations

from dataclasses import dataclass

# Executors (by class name) that run each task on a host or pod of their choosing.
REMOTE_EXECUTORS = ("CeleryExecutor", "KubernetesExecutor", "EdgeExecutor")


@dataclass(frozen=True)
class SubmitHost:
    """What the submitting task knows about where it runs."""

    executors: tuple[str, ...]
    """Airflow's `[core] executor` entries, as configured (class names or module paths)."""
    in_kubernetes_pod: bool
    """Kubernetes set `KUBERNETES_SERVICE_HOST`: this process runs in a pod."""


def local_driver_refusal(host: SubmitHost, master: str, allow_local_driver: bool) -> str | None:
    """Why a local driver (master `master`) must not start here, or None when it may."""
    if allow_local_driver:
        return None
    remote = [e for e in host.executors if e.rsplit(".", 1)[-1] in REMOTE_EXECUTORS]
    if host.in_kubernetes_pod:
        where = "this task runs in a Kubernetes pod, deleted when the task ends"
    elif remote:
        name = remote[0].rsplit(".", 1)[-1]
        where = (
            f"the {name} runs tasks on hosts it picks, so the stop and health tasks may "
            f"not reach this worker's process"
        )
    else:
        return None
    return (
        f"no spark connection: the driver would run with master {master!r} as a process of "
        f"this worker, and {where}; give spark_conn_id (a YARN, k8s:// or spark:// "
        f"connection), or set allow_local_driver=True to run it here anyway"
    )
