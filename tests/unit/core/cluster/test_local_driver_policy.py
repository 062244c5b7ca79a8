"""Where a local driver is refused unless asked for by name."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.core.cluster.local_driver_policy import (
    SubmitHost,
    local_driver_refusal,
)


@pytest.mark.parametrize(
    ("host", "says"),
    [
        (SubmitHost(("CeleryExecutor",), False), "the CeleryExecutor runs tasks on hosts"),
        (
            SubmitHost(("LocalExecutor", "airflow.providers.edge3.executors.EdgeExecutor"), False),
            "the EdgeExecutor runs tasks on hosts",
        ),
        (SubmitHost(("LocalExecutor",), True), "runs in a Kubernetes pod, deleted"),
    ],
)
def test_a_local_driver_is_refused_where_tasks_move_or_pods_end(
    host: SubmitHost, says: str
) -> None:
    refusal = local_driver_refusal(host, "local[2]", allow_local_driver=False)
    assert refusal is not None and says in refusal
    assert "allow_local_driver=True" in refusal and "spark_conn_id" in refusal
    assert "'local[2]'" in refusal
    assert local_driver_refusal(host, "local[2]", allow_local_driver=True) is None


@pytest.mark.parametrize("executors", [("LocalExecutor",), ("SequentialExecutor",), ()])
def test_a_local_driver_runs_on_a_host_that_runs_every_task(executors: tuple[str, ...]) -> None:
    assert local_driver_refusal(SubmitHost(executors, False), "local[2]", False) is None
