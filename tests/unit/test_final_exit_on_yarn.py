"""Which exits a driver under YARN makes final by ending its own application
(`final_exit.final_on_yarn`), and where it finds the ResourceManager
(`final_exit.resource_manager_url`)."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.spark import managed
from airflow_provider_kafkaspark.spark.final_exit import (
    EXIT_BAD_SPEC,
    EXIT_STANDBY_EXPIRED,
    final_on_yarn,
    resource_manager_url,
)


@pytest.mark.parametrize(
    "code", [managed.EXIT_BAD_JOB, EXIT_BAD_SPEC, EXIT_STANDBY_EXPIRED, managed.EXIT_LEASE_LOST]
)
def test_a_final_exit_under_yarn_ends_the_application(code: int) -> None:
    assert final_on_yarn(code, "yarn")


@pytest.mark.parametrize(
    "code",
    [
        managed.EXIT_STOPPED,
        managed.EXIT_FAILED,
        managed.EXIT_NOT_DRAINED,
        managed.EXIT_LEASE_HELD,
    ],
)
def test_an_exit_another_attempt_may_heal_is_left_to_yarn(code: int) -> None:
    assert not final_on_yarn(code, "yarn")


@pytest.mark.parametrize("master", ["local[2]", "spark://host:7077", "k8s://https://k:443", ""])
def test_no_application_to_end_off_yarn(master: str) -> None:
    assert not final_on_yarn(managed.EXIT_BAD_JOB, master)


def test_the_webapp_address() -> None:
    conf = {"yarn.resourcemanager.webapp.address": "rm.example:8188"}
    assert resource_manager_url(conf) == "http://rm.example:8188"


def test_the_hostname_and_default_port_when_no_webapp_address() -> None:
    conf = {
        "yarn.resourcemanager.hostname": "rm.example",
        "yarn.resourcemanager.webapp.address": None,
    }
    assert resource_manager_url(conf) == "http://rm.example:8088"


def test_a_bind_all_address_is_reached_through_the_hostname() -> None:
    conf = {
        "yarn.resourcemanager.webapp.address": "0.0.0.0:8188",
        "yarn.resourcemanager.hostname": "rm.example",
    }
    assert resource_manager_url(conf) == "http://rm.example:8188"


def test_https_only_uses_the_https_address() -> None:
    conf = {
        "yarn.http.policy": "HTTPS_ONLY",
        "yarn.resourcemanager.webapp.address": "rm.example:8088",
        "yarn.resourcemanager.webapp.https.address": "rm.example:8490",
    }
    assert resource_manager_url(conf) == "https://rm.example:8490"
    conf.pop("yarn.resourcemanager.webapp.https.address")
    conf["yarn.resourcemanager.hostname"] = "rm.example"
    assert resource_manager_url(conf) == "https://rm.example:8090"


@pytest.mark.parametrize(
    "conf",
    [{}, {"yarn.resourcemanager.hostname": "0.0.0.0"}, {"yarn.resourcemanager.webapp.address": ""}],
)
def test_no_resource_manager_named(conf: dict[str, str | None]) -> None:
    assert resource_manager_url(conf) is None


def test_with_resource_manager_ha_each_rm_is_named_in_its_ids_order() -> None:
    conf: dict[str, str | None] = {
        "yarn.resourcemanager.ha.enabled": "true",
        "yarn.resourcemanager.ha.rm-ids": "rm1, rm2",
        "yarn.resourcemanager.hostname.rm1": "a.example",
        "yarn.resourcemanager.webapp.address.rm2": "b.example:8188",
        # The plain keys mean nothing under HA.
        "yarn.resourcemanager.webapp.address": "stale.example:8088",
    }
    assert resource_manager_url(conf) == "http://a.example:8088,http://b.example:8188"
    conf["yarn.resourcemanager.ha.enabled"] = "false"
    assert resource_manager_url(conf) == "http://stale.example:8088"
