"""Local-stack settings stay on the local stack: loopback and small-machine defaults apply to
a `local[...]` master only, never to a driver that cluster executors must reach."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.spark.local_session import python_env
from airflow_provider_kafkaspark.spark.session import is_local_master, session_defaults


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[2,3]"])
def test_local_masters_get_loopback_and_small_defaults(master: str) -> None:
    assert is_local_master(master)
    conf = session_defaults(master)
    assert conf["spark.driver.host"] == "127.0.0.1"
    assert conf["spark.sql.shuffle.partitions"] == "2"
    assert python_env(master)["SPARK_LOCAL_IP"] == "127.0.0.1"


@pytest.mark.parametrize("master", ["spark://10.9.0.2:7077", "yarn", "k8s://https://api:6443"])
def test_cluster_masters_get_no_dev_defaults(master: str) -> None:
    assert not is_local_master(master)
    conf = session_defaults(master)
    assert not {k for k in conf if k.startswith("spark.driver.")}
    assert "spark.ui.enabled" not in conf and "spark.sql.shuffle.partitions" not in conf
    assert conf["spark.sql.session.timeZone"] == "UTC"
    env = python_env(master)
    assert "SPARK_LOCAL_IP" not in env and env["PYSPARK_PYTHON"]
