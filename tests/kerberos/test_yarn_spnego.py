"""The ResourceManager's REST API behind SPNEGO (Hadoop's Kerberos web filter), against the
local realm: an unauthenticated request is refused, the provider's status and kill work with
the `spark` connection's principal and keytab (and with a host ticket cache), and without a
ticket they fail at once with a typed error that names the mechanism and holds no secret.

The application is a real YARN application submitted through the same REST API (an AM
container that sleeps): what status and kill see of it is what they see of a Spark driver,
and it takes seconds where a spark-submit takes a minute."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.backends.yarn import YarnBackend
from airflow_provider_kafkaspark.core.cluster import spnego, yarn_rest
from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef
from airflow_provider_kafkaspark.errors import ClusterAuthenticationError
from kafkaspark_devstack.kdc import LocalKdc
from kafkaspark_devstack.yarn import LocalYarnCluster
from kafkaspark_devstack.yarn_config import WebAuth
from tests.kerberos.conftest import CLIENT, HTTP_SERVICE

JOB = "krb_sleeper"


@pytest.fixture(scope="module")
def secured_yarn(
    kdc: LocalKdc, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalYarnCluster]:
    auth = WebAuth(
        principal=kdc.principal(HTTP_SERVICE),
        keytab=str(kdc.add_principal(HTTP_SERVICE)),
        krb5_conf=str(kdc.krb5_conf_path),
        probe_principal=kdc.principal("yarn-probe"),
        probe_keytab=str(kdc.add_principal("yarn-probe")),
    )
    started = time.monotonic()
    with LocalYarnCluster(tmp_path_factory.mktemp("yarn-krb"), web_auth=auth) as cluster:
        print(f"secured YARN up in {time.monotonic() - started:.1f}s at {cluster.web_url}")
        yield cluster


def submit_sleeper(cluster: LocalYarnCluster, seconds: int = 120) -> YarnJobRef:
    """A YARN application whose AM container sleeps, submitted through the REST API as the
    launcher's probe principal (new-application, then the submission)."""
    transport = cluster.rest_transport()
    new = yarn_rest.call(
        cluster.web_url, "/ws/v1/cluster/apps/new-application", "POST", None, transport
    )
    app_id = str(new["application-id"])
    body = {
        "application-id": app_id,
        "application-name": JOB,
        "application-type": "YARN",
        "max-app-attempts": 1,
        "am-container-spec": {"commands": {"command": f"sleep {seconds}"}},
        "resource": {"memory": 256, "vCores": 1},
    }
    yarn_rest.call(cluster.web_url, "/ws/v1/cluster/apps", "POST", body, transport)
    return YarnJobRef(JOB, "file:///unused", app_id, cluster.web_url)


def spark_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, extra: dict[str, str]) -> None:
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": extra}),
    )


def test_an_unauthenticated_request_is_refused_with_a_negotiate_challenge(
    secured_yarn: LocalYarnCluster,
) -> None:
    url = f"{secured_yarn.web_url}/ws/v1/cluster/info"
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(url, timeout=10)
    assert caught.value.code == 401
    assert spnego.offers_negotiate(caught.value.headers.get("WWW-Authenticate", ""))


def test_status_and_kill_with_the_connection_keytab(
    secured_yarn: LocalYarnCluster, kdc: LocalKdc, monkeypatch: pytest.MonkeyPatch
) -> None:
    keytab = kdc.add_principal(CLIENT)
    spark_connection(
        monkeypatch,
        "spark_krb",
        {
            "deploy-mode": "cluster",
            "yarn_resourcemanager_webapp_address": secured_yarn.web_url,
            "principal": kdc.principal(CLIENT),
            "keytab": base64.b64encode(keytab.read_bytes()).decode(),
        },
    )
    ref = submit_sleeper(secured_yarn)
    backend = YarnBackend("spark_krb")
    status = backend.status(ref)
    assert status.state in yarn_rest.ACTIVE_STATES, status
    backend.force_kill(ref)
    deadline = time.monotonic() + 60
    while backend.status(ref).state != "KILLED" and time.monotonic() < deadline:
        time.sleep(1)
    assert backend.status(ref).state == "KILLED"
    # The KDC issued the client a ticket for the RM's HTTP principal.
    assert f"{kdc.principal(CLIENT)} for {kdc.principal(HTTP_SERVICE)}" in kdc.log_tail(200)


def test_a_reference_alone_uses_the_host_ticket_cache(
    secured_yarn: LocalYarnCluster, kdc: LocalKdc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop or health task on another host has no connection: `kinit -kt` (or Airflow's
    ticket renewer) on that host is its login, as for any Hadoop client."""
    ref = submit_sleeper(secured_yarn)
    ccache = f"FILE:{tmp_path / 'ccache'}"
    assert kdc.kinit(CLIENT, kdc.add_principal(CLIENT), ccache).returncode == 0
    monkeypatch.setenv("KRB5CCNAME", ccache)
    backend = YarnBackend()
    assert backend.status(ref).state in yarn_rest.ACTIVE_STATES
    backend.force_kill(ref)
    assert yarn_rest.application(ref)["state"] in ("KILLED", "FINAL_SAVING", "KILLING")


def test_without_a_ticket_status_and_kill_fail_fast_with_a_typed_error(
    secured_yarn: LocalYarnCluster, kdc: LocalKdc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = submit_sleeper(secured_yarn)
    try:
        monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'empty-ccache'}")
        monkeypatch.delenv("KRB5_CLIENT_KTNAME", raising=False)
        backend = YarnBackend()
        for action in (backend.status, backend.force_kill):
            started = time.monotonic()
            with pytest.raises(ClusterAuthenticationError) as caught:
                action(ref)
            assert time.monotonic() - started < 5, "no retries, no waiting"
            message = str(caught.value)
            assert "SPNEGO/Kerberos" in message and secured_yarn.web_url in message
            assert "default Kerberos credentials" in message
    finally:
        yarn_rest.kill(ref, transport=secured_yarn.rest_transport())


def test_a_bad_connection_login_names_the_connection_and_holds_no_secret(
    secured_yarn: LocalYarnCluster, kdc: LocalKdc, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = submit_sleeper(secured_yarn)
    try:
        # A keytab of a principal the KDC has since forgotten: the KDC refuses the login.
        keytab = kdc.add_principal("gone")
        content = base64.b64encode(keytab.read_bytes()).decode()
        kdc._kadmin(f"delprinc -force {kdc.principal('gone')}")
        spark_connection(
            monkeypatch, "spark_gone", {"principal": kdc.principal("gone"), "keytab": content}
        )
        with pytest.raises(ClusterAuthenticationError) as caught:
            YarnBackend("spark_gone").status(ref)
        message = str(caught.value)
        assert "spark connection 'spark_gone'" in message and "SPNEGO/Kerberos" in message
        assert content not in message and content[:16] not in message
        print(message)
    finally:
        yarn_rest.kill(ref, transport=secured_yarn.rest_transport())
