"""A driver's web pages from its reference: YARN's application page and tracking URL, a
local driver's Spark UI only where the spec fixes its address."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.core.cluster.job_ref import (
    KubernetesJobRef,
    LocalJobRef,
    StandaloneJobRef,
    YarnJobRef,
)
from airflow_provider_kafkaspark.core.cluster.web_pages import (
    DriverPages,
    driver_pages,
    first_address,
    local_spark_ui,
    usable_url,
    yarn_application_page,
)

APP = "application_1700000000000_0007"


def yarn(rm: str = "http://rm:8088") -> YarnJobRef:
    return YarnJobRef("j", "/cp", APP, rm)


def local(master: str = "local[2]", host: str = "worker1") -> LocalJobRef:
    return LocalJobRef("j", "/cp", host, 42, "/log", master)


def test_the_yarn_application_page_is_the_first_resource_managers() -> None:
    assert yarn_application_page("http://rm1:8088/,http://rm2:8088", APP) == (
        f"http://rm1:8088/cluster/app/{APP}"
    )


def test_an_address_carries_no_user_into_a_link() -> None:
    assert first_address("https://admin:pw@rm:8090/") == "https://rm:8090"
    assert first_address("rm:8088") == ""  # not a URL: no page rather than a wrong one
    assert yarn_application_page("", APP) == ""


def test_yarn_pages_take_the_resource_managers_tracking_url() -> None:
    pages = driver_pages(yarn(), tracking_url=f"http://proxy:9046/proxy/{APP}/")
    assert pages == DriverPages(
        spark_ui=f"http://proxy:9046/proxy/{APP}/",
        yarn_application=f"http://rm:8088/cluster/app/{APP}",
    )


@pytest.mark.parametrize("said", [None, "", "N/A", "UNASSIGNED"])
def test_without_a_tracking_url_the_spark_ui_is_the_rms_own_proxy(said: str | None) -> None:
    assert driver_pages(yarn(), tracking_url=said).spark_ui == f"http://rm:8088/proxy/{APP}/"


def test_a_tracking_url_keeps_its_query_but_not_a_user() -> None:
    assert usable_url("http://u:p@hist:18080/history/x?a=1#f") == "http://hist:18080/history/x?a=1"


def test_a_local_master_has_no_ui_unless_the_spec_turns_it_on_at_a_fixed_port() -> None:
    assert local_spark_ui(local(), {}) == ""  # the provider turns it off in local mode
    assert local_spark_ui(local(), {"spark.ui.enabled": "true"}) == ""  # port: the first free
    on = {"spark.ui.enabled": "true", "spark.ui.port": "4050"}
    assert local_spark_ui(local(), on) == "http://worker1:4050"
    assert local_spark_ui(local(), {**on, "spark.driver.host": "10.0.0.5"}) == (
        "http://10.0.0.5:4050"
    )
    assert local_spark_ui(local(), {**on, "spark.ui.port": "0"}) == ""  # a random port


def test_a_standalone_client_driver_has_spark_s_default_ui_on() -> None:
    ref = StandaloneJobRef("j", "/cp", "worker1", 42, "/log", "spark://m:7077")
    assert local_spark_ui(ref, {"spark.ui.port": "4041"}) == "http://worker1:4041"
    assert local_spark_ui(ref, {"spark.ui.port": "4041", "spark.ui.enabled": "false"}) == ""


def test_an_ipv6_driver_host_is_bracketed() -> None:
    on = {"spark.ui.enabled": "true", "spark.ui.port": "4050", "spark.driver.host": "::1"}
    assert local_spark_ui(local(), on) == "http://[::1]:4050"


def test_a_stopped_local_driver_and_a_kubernetes_pod_have_no_pages() -> None:
    on = {"spark.ui.enabled": "true", "spark.ui.port": "4050"}
    assert driver_pages(local(), on, running=False) == DriverPages()
    pod = KubernetesJobRef("j", "/cp", "ns", "job-1", "uid-1")
    assert driver_pages(pod, on) == DriverPages()
    assert driver_pages(None) == DriverPages()
