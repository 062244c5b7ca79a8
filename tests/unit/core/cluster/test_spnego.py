"""SPNEGO's decisions without a KDC: what a challenge offers, which service a URL names, and
the logins refused before any network call (the real realm is in tests/kerberos)."""

from __future__ import annotations

import base64
import builtins
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.core.cluster import spnego
from airflow_provider_kafkaspark.core.cluster.spnego import KerberosLogin
from airflow_provider_kafkaspark.errors import ClusterAuthenticationError, InvalidInputError


@pytest.mark.parametrize(
    ("header", "offered"),
    [
        ("Negotiate", True),
        ("negotiate abc=", True),
        ('Basic realm="x", Negotiate', True),
        ('Basic realm="x"', False),
        ("", False),
        ("NegotiateX", False),
    ],
)
def test_a_challenge_offers_negotiate(header: str, offered: bool) -> None:
    assert spnego.offers_negotiate(header) is offered


def test_the_server_token_of_mutual_authentication() -> None:
    assert spnego.server_token("Negotiate " + base64.b64encode(b"tok").decode()) == b"tok"
    assert spnego.server_token("Negotiate") is None
    assert spnego.server_token("Negotiate !!not base64") is None


def test_the_service_is_the_url_host() -> None:
    assert spnego.service_host("http://RM1.example.com:8088/ws/v1") == "rm1.example.com"
    assert spnego.origin("http://u:p@rm1:8088/ws/v1?x=1") == "http://rm1:8088"


def test_a_missing_keytab_fails_fast_naming_where_and_the_mechanism(tmp_path: Path) -> None:
    login = KerberosLogin("me@R", str(tmp_path / "gone.keytab"), "spark connection 'spark_krb'")
    with pytest.raises(ClusterAuthenticationError) as caught:
        spnego.authorization("http://localhost:8088/ws/v1/cluster/info", login)
    message = str(caught.value)
    assert "spark connection 'spark_krb'" in message
    assert "SPNEGO/Kerberos" in message
    assert "gone.keytab" in message and "missing" in message
    assert isinstance(caught.value, InvalidInputError)


def test_a_keytab_without_its_principal_is_refused(tmp_path: Path) -> None:
    keytab = tmp_path / "k.keytab"
    keytab.write_bytes(b"\x05\x02")
    with pytest.raises(ClusterAuthenticationError, match="no principal"):
        spnego.check_login(KerberosLogin(None, str(keytab), "spark connection 'x'"))


def test_no_gssapi_is_a_typed_error_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_import = builtins.__import__

    def without_gssapi(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "gssapi":
            raise ImportError("No module named 'gssapi'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_gssapi)
    with pytest.raises(ClusterAuthenticationError, match=r"gssapi. package is not installed"):
        spnego.authorization("http://localhost:8088/", KerberosLogin())


def test_a_connection_keytab_is_base64_of_a_keytab_and_never_shown() -> None:
    assert spnego.decode_keytab(base64.b64encode(b"\x05\x02rest").decode(), "c") == b"\x05\x02rest"
    for bad in ("/etc/security/keytabs/me.keytab", base64.b64encode(b"s3cr3t").decode()):
        with pytest.raises(InvalidInputError) as caught:
            spnego.decode_keytab(bad, "spark connection 'spark_krb'")
        assert bad not in str(caught.value)
        assert "spark connection 'spark_krb'" in str(caught.value)


def test_each_login_has_its_own_memory_ccache() -> None:
    one = spnego.ccache_name(KerberosLogin("a@R", "/a.keytab"))
    assert one.startswith("MEMORY:")
    assert one == spnego.ccache_name(KerberosLogin("a@R", "/a.keytab"))
    assert one != spnego.ccache_name(KerberosLogin("b@R", "/a.keytab"))
