"""SPNEGO (HTTP `Negotiate` with Kerberos) for a secured cluster's REST API: the YARN
ResourceManager's, when its web filter is Hadoop's `hadoop.http.authentication.type=kerberos`.

Who logs in (`KerberosLogin`), as a Hadoop user expects:

- with a principal and a keytab file: that principal, from that keytab, into a ticket cache of
  this process's memory (nothing written to disk, nothing shared with other processes);
- otherwise this host's default Kerberos credentials: the ticket cache `KRB5CCNAME` names (as
  `kinit -kt` or Airflow's `airflow kerberos` ticket renewer keep it), else MIT Kerberos' client
  keytab `KRB5_CLIENT_KTNAME`; with a principal, that principal's ticket among them.

The host's `krb5.conf` (or `KRB5_CONFIG`) says where the realm's KDC is. The service asked for
is `HTTP@<the URL's host>`: the RM's address must be the host name its HTTP principal names.

The decisions (does an answer ask for Negotiate, what a failure says) are plain functions;
`authorization` and `confirm` do the Kerberos work through the `gssapi` package, imported only
when a server asks for it: a YARN driver container, which imports the REST client but never
meets a Negotiate challenge of its own, needs no Kerberos library.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from airflow_provider_kafkaspark.errors import ClusterAuthenticationError, InvalidInputError

MECHANISM = "SPNEGO/Kerberos"
NEGOTIATE = "Negotiate"
DEFAULT_SOURCE = (
    "this host's default Kerberos credentials (the ticket cache KRB5CCNAME, else the client "
    "keytab KRB5_CLIENT_KTNAME)"
)
# Every keytab file starts with these two bytes (format version 0x0502).
KEYTAB_MAGIC = b"\x05\x02"


@dataclass(frozen=True)
class KerberosLogin:
    """Who logs in, and where that was configured (for messages: a connection, or the host).
    A keytab's path is not a secret (its content is): it may appear in messages."""

    principal: str | None = None
    keytab: str | None = None
    source: str = DEFAULT_SOURCE


LoginSource = Callable[[], KerberosLogin]
"""Resolved only when a server asks for Negotiate: an unsecured cluster's calls never read a
connection for it."""


# -- pure decisions ----------------------------------------------------------------------


def offers_negotiate(www_authenticate: str) -> bool:
    """A 401's `WWW-Authenticate` header offers SPNEGO (`Negotiate`, maybe among others)."""
    return any(
        part.strip().split(" ", 1)[0].lower() == "negotiate" for part in www_authenticate.split(",")
    )


def server_token(www_authenticate: str) -> bytes | None:
    """The server's own token in a `Negotiate <base64>` header (mutual authentication)."""
    for part in www_authenticate.split(","):
        scheme, _, value = part.strip().partition(" ")
        if scheme.lower() == "negotiate" and value.strip():
            try:
                return base64.b64decode(value.strip(), validate=True)
            except (binascii.Error, ValueError):
                return None
    return None


def service_host(url: str) -> str:
    """The host whose `HTTP/<host>` principal the client asks a ticket for."""
    return (urllib.parse.urlsplit(url).hostname or "").lower()


def origin(url: str) -> str:
    """scheme://host:port of `url`, for messages (no path, query or credentials)."""
    parts = urllib.parse.urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}"


def check_login(login: KerberosLogin) -> None:
    """Refuse a login that cannot work before any network call: a keytab file that is not
    there or not readable, or one without the principal to take from it."""
    if login.keytab is None:
        return
    if not login.principal:
        raise ClusterAuthenticationError(
            f"{login.source}: a keytab but no principal for the {MECHANISM} login "
            f"(give the principal whose keys the keytab holds)"
        )
    if not os.path.isfile(login.keytab):
        raise ClusterAuthenticationError(
            f"{login.source}: the keytab {login.keytab} of principal {login.principal} is "
            f"missing, so the {MECHANISM} login cannot be made"
        )
    if not os.access(login.keytab, os.R_OK):
        raise ClusterAuthenticationError(
            f"{login.source}: the keytab {login.keytab} of principal {login.principal} is not "
            f"readable by this user ({MECHANISM} login)"
        )


def failure_message(login: KerberosLogin, url: str, reason: str) -> str:
    who = f"principal {login.principal}" if login.principal else "the default principal"
    keytab = f" with keytab {login.keytab}" if login.keytab else ""
    return (
        f"{login.source}: the {MECHANISM} login of {who}{keytab} to the ResourceManager "
        f"{origin(url)} (service HTTP/{service_host(url)}) failed: {reason}"
    )


def decode_keytab(value: str, where: str) -> bytes:
    """A connection's `keytab` field as the official Spark provider keeps it (`base64
    <keytab file>`), checked to be a keytab; a bad one is named by `where`, never shown."""
    try:
        content = base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        content = b""
    if not content.startswith(KEYTAB_MAGIC):
        raise InvalidInputError(
            f"{where}: the extra's `keytab` is not a base64-encoded keytab (the Spark "
            f"provider's form: the output of `base64 <keytab file>`), so no {MECHANISM} "
            f"login can be made from it"
        )
    return content


def ccache_name(login: KerberosLogin) -> str:
    """A ticket cache in this process's memory, one per principal and keytab: each later call
    reuses the ticket its first call got, and no other process sees it."""
    digest = hashlib.sha256(f"{login.principal}\0{login.keytab}".encode()).hexdigest()[:16]
    return f"MEMORY:kafkaspark-{digest}"


# -- Kerberos ----------------------------------------------------------------------------


def _gssapi(login: KerberosLogin, url: str) -> Any:
    try:
        import gssapi  # type: ignore[import-not-found, unused-ignore]  # the kerberos extra
    except ImportError:
        raise ClusterAuthenticationError(
            failure_message(
                login,
                url,
                "the ResourceManager asks for Negotiate (HTTP 401) and Python's `gssapi` "
                "package is not installed here (pip install 'airflow-provider-kafkaspark"
                "[kerberos]'; it needs MIT Kerberos' libraries)",
            )
        ) from None
    return gssapi


def authorization(url: str, login: KerberosLogin) -> tuple[str, Any]:
    """The `Authorization: Negotiate ...` header value for a request to `url`, and the
    security context that `confirm` checks the server's answer with. Any Kerberos failure
    (no ticket, no such principal, a keytab without its keys, no KDC) is a
    ClusterAuthenticationError: asking again would fail the same way."""
    check_login(login)
    gssapi = _gssapi(login, url)
    try:
        name = (
            gssapi.Name(login.principal, gssapi.NameType.kerberos_principal)
            if login.principal
            else None
        )
        if login.keytab:
            store = {"client_keytab": login.keytab, "ccache": ccache_name(login)}
            creds = gssapi.Credentials(name=name, usage="initiate", store=store)
        else:
            creds = gssapi.Credentials(name=name, usage="initiate")
        service = gssapi.Name(f"HTTP@{service_host(url)}", gssapi.NameType.hostbased_service)
        context = gssapi.SecurityContext(
            name=service,
            creds=creds,
            usage="initiate",
            mech=gssapi.MechType.kerberos,
            flags=gssapi.RequirementFlag.mutual_authentication
            | gssapi.RequirementFlag.out_of_sequence_detection,
        )
        token = context.step()
    except gssapi.exceptions.GSSError as exc:
        raise ClusterAuthenticationError(failure_message(login, url, _gss_reason(exc))) from None
    return f"{NEGOTIATE} {base64.b64encode(token or b'').decode()}", context


def confirm(context: Any, www_authenticate: str, login: KerberosLogin, url: str) -> None:
    """Check the server's mutual-authentication token when it sent one (Hadoop's filter
    does): an answer that does not prove it comes from `HTTP/<host>` is not taken."""
    token = server_token(www_authenticate)
    if token is None or context.complete:
        return
    gssapi = _gssapi(login, url)
    try:
        context.step(token)
    except gssapi.exceptions.GSSError as exc:
        raise ClusterAuthenticationError(
            failure_message(
                login, url, f"the server's answer failed mutual authentication: {_gss_reason(exc)}"
            )
        ) from None


def _gss_reason(exc: Exception) -> str:
    """GSS-API's own words (major and minor status): a principal, a keytab or cache name,
    never key material."""
    try:
        return " ".join(str(exc.gen_message()).split())  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a message for a message: never hide the first error
        return type(exc).__name__
