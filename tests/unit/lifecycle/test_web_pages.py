"""A driver's pages when its ResourceManager does not answer: the built ones, no error."""

from __future__ import annotations

import time

from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef
from airflow_provider_kafkaspark.lifecycle.web_pages import observed_pages

APP = "application_1700000000000_0001"


def test_a_resource_manager_that_does_not_answer_leaves_the_built_pages() -> None:
    ref = YarnJobRef("j", "/cp", APP, "http://127.0.0.1:1")  # a closed port
    started = time.monotonic()
    pages = observed_pages(ref)
    assert pages.yarn_application == f"http://127.0.0.1:1/cluster/app/{APP}"
    assert pages.spark_ui == f"http://127.0.0.1:1/proxy/{APP}/"
    assert time.monotonic() - started < 10
