"""The pure decisions of the backends: which backend runs a driver, which handle names which
driver, and who may kill it (what `if_running` decides: tests/unit/lifecycle/test_submit.py)."""

from __future__ import annotations

import socket

import pytest

from airflow_provider_kafkaspark.backends import BackendKind, backend_kind
from airflow_provider_kafkaspark.backends.local import LocalBackend, StandaloneBackend
from airflow_provider_kafkaspark.core.cluster.job_ref import (
    LocalJobRef,
    StandaloneJobRef,
    YarnJobRef,
    check_ref_names,
    job_ref_to_dict,
    ref_from_handle,
)
from airflow_provider_kafkaspark.errors import InvalidArgumentError, RefusedError


@pytest.mark.parametrize(
    ("master", "mode", "kind"),
    [
        ("local[2]", None, BackendKind.LOCAL),
        ("yarn", "client", BackendKind.LOCAL),
        ("spark://h:7077", None, BackendKind.STANDALONE),
        ("spark://h:7077", "client", BackendKind.STANDALONE),
        ("yarn", "cluster", BackendKind.YARN),
        ("k8s://https://api:6443", "cluster", BackendKind.KUBERNETES),
    ],
)
def test_backend_kind(master: str, mode: str | None, kind: BackendKind) -> None:
    assert backend_kind(master, mode) is kind


@pytest.mark.parametrize(
    ("master", "mode", "named"),
    [
        ("spark://h:7077", "cluster", "standalone master cannot run a Python driver"),
        # Never silently a process of the submitting host (a worker pod on Kubernetes).
        ("k8s://https://api:6443", "client", "runs in cluster deploy mode"),
        ("k8s://https://api:6443", None, "runs in cluster deploy mode"),
        ("yarn", "cluster-ish", "'cluster-ish'"),
    ],
)
def test_unsupported_deployments_are_named(master: str, mode: str, named: str) -> None:
    with pytest.raises(InvalidArgumentError, match=named):
        backend_kind(master, mode)


YARN = YarnJobRef("job", "s3://b/cp", "application_1_0001", "http://rm:8088")


def test_a_handle_names_its_driver() -> None:
    where = "stop: handle"
    common = {"job_name": "job", "checkpoint": "s3://b/cp", "host": "w1", "where": where}
    assert ref_from_handle(None, **common) is None
    assert ref_from_handle({"job_ref": job_ref_to_dict(YARN), "pid": 9}, **common) == YARN
    assert ref_from_handle(job_ref_to_dict(YARN), **common) == YARN
    assert ref_from_handle({"pid": "12"}, **common) == LocalJobRef(
        "job", "s3://b/cp", "w1", 12, "", ""
    )
    assert ref_from_handle({"mode": "cluster"}, **common) is None
    with pytest.raises(InvalidArgumentError, match=r"handle\.job_ref: backend 'mesos'"):
        ref_from_handle({"job_ref": {"backend": "mesos"}}, **common)


def test_a_reference_of_another_job_is_refused() -> None:
    check_ref_names(YARN, job_name="job", checkpoint="s3://b/cp", where="h")
    with pytest.raises(InvalidArgumentError, match=r"names job 'job'.*for job 'other'"):
        check_ref_names(YARN, job_name="other", checkpoint="s3://b/cp", where="h")
    with pytest.raises(InvalidArgumentError, match="s3://b/elsewhere"):
        check_ref_names(YARN, job_name="job", checkpoint="s3://b/elsewhere", where="h")


def test_a_local_driver_of_another_host_is_neither_seen_nor_killed_from_here() -> None:
    ref = LocalJobRef("job", "/cp", "worker-7", 1, "", "local[2]")
    status = LocalBackend().status(ref)
    assert status.alive is None and status.detail["host"] == "worker-7"
    with pytest.raises(RefusedError, match="pid 1 on host worker-7"):
        LocalBackend().force_kill(ref)


def test_a_dead_local_driver_of_this_host_is_gone() -> None:
    ref = LocalJobRef("job", "/cp", socket.gethostname(), 2**22 + 17, "", "local[2]")
    assert LocalBackend().status(ref).alive is False


def test_the_standalone_backend_takes_its_own_references() -> None:
    backend = StandaloneBackend("spark://h:7077")
    with pytest.raises(InvalidArgumentError, match="local backend, this is the standalone"):
        backend.status(LocalJobRef("job", "/cp", socket.gethostname(), 1, "", "local[2]"))
    ref = StandaloneJobRef("job", "/cp", socket.gethostname(), 2**22 + 17, "", "spark://h:7077")
    assert backend.status(ref).alive is False
    with pytest.raises(InvalidArgumentError, match="spark://host:port"):
        StandaloneBackend("local[2]")
