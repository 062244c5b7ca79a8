"""The links from task instances: the job page's URL, what is stored, and each link reading
its entry back (the stored XCom stands in a dict here)."""

from __future__ import annotations

from typing import Any, cast

import pytest

import airflow_provider_kafkaspark
from airflow_provider_kafkaspark.core.cluster.web_pages import DriverPages
from airflow_provider_kafkaspark.links import (
    LINK_CLASSES,
    LINKS_XCOM_KEY,
    SparkUiLink,
    StreamingJobLink,
    YarnApplicationLink,
    job_page_path,
    job_page_url,
    link_targets,
)
from airflow_provider_kafkaspark.operators.deploy import DeployStreamingJobOperator
from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator
from airflow_provider_kafkaspark.operators.submit import (
    RestoreStreamingJobOperator,
    SubmitStreamingJobOperator,
)


def test_the_job_page_path_quotes_the_name() -> None:
    assert job_page_path("ip_count") == "/kafkaspark/jobs/ip_count"
    assert job_page_path("a b/c") == "/kafkaspark/jobs/a%20b%2Fc"


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("http://airflow:8080", "http://airflow:8080/kafkaspark/jobs/j"),
        ("https://host/airflow/", "https://host/airflow/kafkaspark/jobs/j"),
        ("", "/kafkaspark/jobs/j"),
        (None, "/kafkaspark/jobs/j"),
    ],
)
def test_the_job_page_is_under_the_api_servers_base_url(base: str | None, url: str) -> None:
    assert job_page_url("j", base) == url


def test_the_checkpoint_tells_two_jobs_of_one_name_apart() -> None:
    assert job_page_url("j", "http://af:8080", "s3://b/jobs/j/checkpoint") == (
        "http://af:8080/kafkaspark/jobs/j?checkpoint=s3%3A%2F%2Fb%2Fjobs%2Fj%2Fcheckpoint"
    )


def test_the_stored_targets_name_each_link() -> None:
    pages = DriverPages(spark_ui="http://rm/proxy/a/", yarn_application="http://rm/cluster/app/a")
    assert link_targets("j", pages, "http://af:8080") == {
        "spark_ui": "http://rm/proxy/a/",
        "yarn_application": "http://rm/cluster/app/a",
        "job_page": "http://af:8080/kafkaspark/jobs/j",
    }


def test_each_link_reads_its_entry_and_is_empty_without_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from airflow.sdk.execution_time import xcom

    stored: dict[str, Any] = {
        LINKS_XCOM_KEY: {"spark_ui": "http://ui", "yarn_application": "", "job_page": "/p"}
    }

    def get_value(*, ti_key: object, key: str) -> Any:
        return stored.get(key)

    monkeypatch.setattr(xcom.XCom, "get_value", staticmethod(get_value))
    op = cast(Any, None)
    key = cast(Any, object())
    assert SparkUiLink().get_link(op, ti_key=key) == "http://ui"
    assert YarnApplicationLink().get_link(op, ti_key=key) == ""
    assert StreamingJobLink().get_link(op, ti_key=key) == "/p"
    stored.clear()  # a task that failed before its links were stored
    assert StreamingJobLink().get_link(op, ti_key=key) == ""


def test_a_link_whose_xcom_cannot_be_read_is_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk.execution_time import xcom

    def broken(*, ti_key: object, key: str) -> Any:
        raise RuntimeError("no supervisor")

    monkeypatch.setattr(xcom.XCom, "get_value", staticmethod(broken))
    assert SparkUiLink().get_link(cast(Any, None), ti_key=cast(Any, object())) == ""


def test_the_job_operators_carry_the_three_links_and_the_provider_registers_them() -> None:
    names = {"Spark UI", "YARN application", "Streaming job"}
    for kind in (
        SubmitStreamingJobOperator,
        RestoreStreamingJobOperator,
        DeployStreamingJobOperator,
        StopStreamingJobOperator,
    ):
        assert {link.name for link in kind.operator_extra_links} == names, kind
    info = airflow_provider_kafkaspark.get_provider_info()
    assert info["extra-links"] == LINK_CLASSES
    assert len({link.xcom_key for link in SubmitStreamingJobOperator.operator_extra_links}) == 3
