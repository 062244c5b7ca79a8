"""The local YARN cluster is real: a PySpark application runs in cluster deploy mode, YARN
restarts a killed application master, and the REST adapter acts only on the job a reference
names. Run with `make e2e-cluster` (not in CI's `make test`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.cluster import yarn_rest
from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef
from airflow_provider_kafkaspark.errors import (
    ClusterUnavailableError,
    JobNotFoundError,
    RefusedError,
)
from kafkaspark_devstack.yarn import LocalYarnCluster, application_master_pids
from tests.cluster.yarn_apps import submit, wait


def state(ref: YarnJobRef) -> tuple[str, str]:
    app = yarn_rest.application(ref)
    return str(app["state"]), str(app["finalStatus"])


@pytest.mark.extended(
    covered_by="test_streaming_on_yarn.py (the example job as a PySpark application in "
    "cluster mode on this cluster)"
)
def test_a_pyspark_application_runs_in_cluster_mode(yarn: LocalYarnCluster, tmp_path: Path) -> None:
    out = tmp_path / "sum.txt"
    app_id = submit(yarn, tmp_path, "smoke", out, linger_s=0, attempts=1)
    ref = YarnJobRef("smoke", "unused", app_id, yarn.web_url)
    final = wait("the application to finish", lambda: state(ref), lambda s: s[0] == "FINISHED", 240)
    assert final == ("FINISHED", "SUCCEEDED"), yarn_rest.application(ref).get("diagnostics")
    assert out.read_text() == "499500\n"


@pytest.mark.extended(
    covered_by="test_streaming_on_yarn (a killed driver restarted), test_rm_failover (a REST kill)"
)
def test_yarn_restarts_a_killed_driver_and_a_rest_kill_ends_it(
    yarn: LocalYarnCluster, tmp_path: Path
) -> None:
    import os
    import signal

    out = tmp_path / "sum.txt"
    app_id = submit(yarn, tmp_path, "restarts", out, linger_s=600, attempts=3)
    ref = YarnJobRef("restarts", "unused", app_id, yarn.web_url)
    wait("the first attempt's result", lambda: out.exists() and out.read_text(), bool, 240)
    pids = application_master_pids(app_id)
    assert len(pids) == 1, pids
    os.kill(pids[0], signal.SIGKILL)
    # YARN starts a second attempt of the same application, which runs the driver again.
    wait("a second attempt", lambda: len(yarn_rest.attempts(ref)), lambda n: n >= 2, 240)
    wait("the second attempt's result", lambda: out.read_text().count("\n"), lambda n: n >= 2, 240)
    assert state(ref)[0] == "RUNNING"

    # A reference naming another job is refused, and the application keeps running.
    other = YarnJobRef("another-job", "unused", app_id, yarn.web_url)
    with pytest.raises(RefusedError, match="not job 'another-job'"):
        yarn_rest.kill(other)
    assert state(ref)[0] == "RUNNING"

    yarn_rest.kill(ref)
    final = wait("the kill", lambda: state(ref), lambda s: s[0] == "KILLED", 120)
    assert final[0] == "KILLED"
    assert len(yarn_rest.attempts(ref)) == 2  # a kill is not followed by another attempt


def test_unknown_applications_and_an_unreachable_resource_manager(yarn: LocalYarnCluster) -> None:
    unknown = YarnJobRef("x", "unused", "application_1_999", yarn.web_url)
    with pytest.raises(JobNotFoundError, match="application_1_999"):
        yarn_rest.application(unknown)
    # A port nothing listens on, on loopback.
    from kafkaspark_devstack.ports import free_port

    gone = YarnJobRef("x", "unused", "application_1_1", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ClusterUnavailableError, match="did not answer"):
        yarn_rest.application(gone)
