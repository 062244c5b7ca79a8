"""Deployment backends: one per cluster manager (local processes, a Spark standalone cluster,
YARN), each turning a job reference into status and kill calls in that manager's own terms."""

from __future__ import annotations

from airflow_provider_kafkaspark.backends.base import JobBackend, JobStatus
from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef, StandaloneJobRef, YarnJobRef


def backend_for(ref: JobRef) -> JobBackend:
    """The backend that observes and kills what `ref` names (no connection needed)."""
    if isinstance(ref, YarnJobRef):
        from airflow_provider_kafkaspark.backends.yarn import YarnBackend

        return YarnBackend()
    from airflow_provider_kafkaspark.backends.local import LocalBackend, StandaloneBackend

    if isinstance(ref, StandaloneJobRef):
        return StandaloneBackend(ref.master)
    return LocalBackend(ref.master)


def driver_status(ref: JobRef) -> JobStatus:
    return backend_for(ref).status(ref)


def kill_driver(ref: JobRef) -> None:
    backend_for(ref).force_kill(ref)
