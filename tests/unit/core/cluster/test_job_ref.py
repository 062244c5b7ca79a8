"""Job references: round trips, bad input named by field, and the checks that keep a stop or
kill on the job the reference names."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_kafkaspark.core.cluster.job_ref import (
    KubernetesJobRef,
    LocalJobRef,
    StandaloneJobRef,
    YarnJobRef,
    check_kubernetes_job,
    check_local_kill,
    check_yarn_application,
    job_ref_from_dict,
    job_ref_to_dict,
    require_backend,
)
from airflow_provider_kafkaspark.errors import InvalidArgumentError, RefusedError

LOCAL = LocalJobRef("ip_count", "s3://b/cp", "worker-1", 4242, "/tmp/d.log", "local[2]")
STANDALONE = StandaloneJobRef(
    "ip_count", "s3://b/cp", "worker-1", 4242, "/tmp/d.log", "spark://m:7077"
)
LAUNCHED = LocalJobRef(
    "ip_count",
    "s3://b/cp",
    "worker-1",
    4242,
    "/tmp/d.log",
    "local[2]",
    spec_file="/tmp/d.spec.json",
    started_at_ms=1_700_000_000_000,
    work_dir="/tmp/d.work",
)
YARN = YarnJobRef("ip_count", "s3://b/cp", "application_1700000000000_0007", "http://rm:8088")
K8S = KubernetesJobRef(
    "ip_count",
    "s3://b/cp",
    "streaming",
    "ip-count-1a2b3c4d",
    "5e0c7f3e-8d1a-4b57-9a55-3f0e2a1b9c77",
    "https://10.244.0.1:6443",
)


@pytest.mark.parametrize("ref", [LOCAL, LAUNCHED, STANDALONE, YARN, K8S])
def test_a_reference_survives_its_dict_form(ref: Any) -> None:
    raw = job_ref_to_dict(ref)
    assert raw["backend"] == ref.backend
    assert job_ref_from_dict(raw) == ref


def test_a_local_reference_written_before_the_launch_fields_still_loads() -> None:
    # The dict form references had before spec_file, started_at_ms and work_dir: XComs and
    # submitted markers of earlier submits.
    old = {
        "backend": "local",
        "job_name": "ip_count",
        "checkpoint": "s3://b/cp",
        "host": "worker-1",
        "pid": 4242,
        "log_file": "/tmp/d.log",
        "master": "local[2]",
    }
    ref = job_ref_from_dict(old)
    assert ref == LOCAL
    assert isinstance(ref, LocalJobRef)
    assert (ref.spec_file, ref.started_at_ms, ref.work_dir) == ("", 0, "")
    assert job_ref_from_dict({**old, "backend": "standalone", "master": "spark://m:7077"}) == (
        STANDALONE
    )


def test_the_launch_fields_are_in_the_dict_form_and_typed() -> None:
    raw = job_ref_to_dict(LAUNCHED)
    assert raw["spec_file"] == "/tmp/d.spec.json" and raw["work_dir"] == "/tmp/d.work"
    assert raw["started_at_ms"] == 1_700_000_000_000
    with pytest.raises(InvalidArgumentError, match="started_at_ms must be int"):
        job_ref_from_dict({**raw, "started_at_ms": "soon"})
    with pytest.raises(InvalidArgumentError, match="work_dir must be str"):
        job_ref_from_dict({**raw, "work_dir": None})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"backend": "mesos"}, "backend 'mesos' is not one of local, yarn, standalone, kubernetes"),
        ({"application_id": None}, "application_id must be str"),
        ({"application_id": "app-7"}, "is not a YARN application id"),
        ({"extra": 1}, "unknown fields extra"),
    ],
)
def test_bad_references_name_the_field(change: dict[str, Any], message: str) -> None:
    raw = {**job_ref_to_dict(YARN), **change}
    with pytest.raises(InvalidArgumentError, match=message):
        job_ref_from_dict(raw, where="stop.job_ref")


def test_a_missing_field_and_a_wrong_type_are_named() -> None:
    raw = job_ref_to_dict(LOCAL)
    del raw["host"]
    with pytest.raises(InvalidArgumentError, match="local reference lacks host"):
        job_ref_from_dict(raw)
    with pytest.raises(InvalidArgumentError, match="pid must be int"):
        job_ref_from_dict({**job_ref_to_dict(LOCAL), "pid": "4242"})
    with pytest.raises(InvalidArgumentError, match="expected an object"):
        job_ref_from_dict("application_1_2")


def test_a_reference_of_another_backend_is_refused() -> None:
    require_backend(YARN, "yarn", "stop")
    with pytest.raises(InvalidArgumentError, match="reference is for the local backend"):
        require_backend(LOCAL, "yarn", "stop")
    with pytest.raises(InvalidArgumentError, match="reference is for the standalone backend"):
        require_backend(STANDALONE, "local", "stop")


def test_a_pid_is_killed_only_on_its_own_host() -> None:
    check_local_kill(LOCAL, "worker-1")
    with pytest.raises(RefusedError, match="pid 4242 on host worker-1, and this is host worker-2"):
        check_local_kill(LOCAL, "worker-2")


def test_a_yarn_application_of_another_job_is_not_touched() -> None:
    check_yarn_application(YARN, {"id": YARN.application_id, "name": "ip_count"})
    with pytest.raises(RefusedError, match="is 'backfill', not job 'ip_count'"):
        check_yarn_application(YARN, {"id": YARN.application_id, "name": "backfill"})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"namespace": "Streaming"}, "namespace 'Streaming' is not a Kubernetes name"),
        ({"name": "ip_count"}, "name 'ip_count' is not a Kubernetes name"),
        ({"uid": ""}, "uid '' is not a Kubernetes name"),
        ({"uid": 7}, "uid must be str"),
    ],
)
def test_bad_kubernetes_references_name_the_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        job_ref_from_dict({**job_ref_to_dict(K8S), **change}, where="stop.job_ref")


def test_a_kubernetes_job_of_another_submit_or_job_is_not_touched() -> None:
    own = {"uid": K8S.uid, "annotations": {"kafkaspark.apache.org/job-name": "ip_count"}}
    check_kubernetes_job(K8S, own)
    # The same name, recreated by another submit: another uid.
    with pytest.raises(RefusedError, match="not the submit's '5e0c7f3e"):
        check_kubernetes_job(K8S, {**own, "uid": "0000"})
    with pytest.raises(RefusedError, match="runs job 'backfill', not job 'ip_count'"):
        check_kubernetes_job(
            K8S, {**own, "annotations": {"kafkaspark.apache.org/job-name": "backfill"}}
        )
    with pytest.raises(RefusedError, match="runs job None"):
        check_kubernetes_job(K8S, {"uid": K8S.uid})
