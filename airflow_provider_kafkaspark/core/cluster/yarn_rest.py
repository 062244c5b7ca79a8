"""A YARN ResourceManager's REST API (`/ws/v1/cluster/apps/...`): an application's record and
a kill. The official SparkSubmitHook has the same two calls as private methods of a submit in
progress; a stop or health task on another host has no such hook, so this module makes them
from a job reference alone.

ResourceManager HA: a reference's `resource_manager` may name several web addresses, comma
separated (`http://rm1:8088,http://rm2:8088`, the order of `yarn.resourcemanager.ha.rm-ids`).
Each call goes to the address that answered last in this process (else the first), and on no
answer, a standby's answer or a failing server, to each other address once, in order: a
standby RM redirects (307) the application resources to the active one, which urllib would
not follow for a PUT, so redirects are never followed, only taken as "standby". With no
active one among them the call fails at once with `NoActiveResourceManagerError`, naming each
address and what it said: the caller's own polling decides whether to ask again later.

Secured clusters: an RM whose web filter asks for SPNEGO (a 401 with `WWW-Authenticate:
Negotiate`) gets the request again with a Kerberos ticket (`spnego.py`): by default this
host's ticket cache or client keytab, or the login a caller gives (`kerberos_transport`, as
the YARN backend does from its `spark` connection). A login that fails, or a 401 this client
cannot answer, is a `ClusterAuthenticationError` at once: not a reason to try another RM.

The decisions (which address next, what an answer means) are plain functions over the
answer; the one function that does I/O is the transport (`urllib_transport`), so that another
one can take its place.
"""

from __future__ import annotations

import functools
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from airflow_provider_kafkaspark.core.cluster import spnego
from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef, check_yarn_application
from airflow_provider_kafkaspark.errors import (
    ClusterAuthenticationError,
    ClusterUnavailableError,
    InvalidArgumentError,
    JobNotFoundError,
    NoActiveResourceManagerError,
)

# States in which the application still runs or is about to.
ACTIVE_STATES = frozenset({"NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING"})
TIMEOUT_S = 10.0
# What a standby RM's web filter writes when it cannot redirect (Hadoop's RMWebAppFilter).
STANDBY_TEXT = "This is standby RM"


@dataclass(frozen=True)
class Answer:
    """What one address said to one request: an HTTP status and body, or (status 0) why
    there was no answer."""

    status: int
    body: str = ""
    location: str = ""  # a redirect's target
    error: str = ""
    authenticate: str = ""  # a 401's WWW-Authenticate header


Transport = Callable[[str, str, "bytes | None"], Answer]
"""(method, url, JSON body or None) -> Answer; never raises for a network failure (a failed
login is a ClusterAuthenticationError)."""

Kind = Literal[
    "active", "standby", "unreachable", "failed", "not_found", "refused", "unauthenticated"
]
# Answers after which another address may do better; the others end the call.
MOVE_ON: frozenset[Kind] = frozenset({"standby", "unreachable", "failed"})


@dataclass(frozen=True)
class Verdict:
    kind: Kind
    detail: str  # what the address said, for an error message (no secret: no URL in it)
    payload: dict[str, Any] | None = None


# -- pure decisions ----------------------------------------------------------------------


def resource_manager_addresses(resource_manager: str) -> list[str]:
    """The web addresses a reference's `resource_manager` names, in order, without duplicates
    or trailing slashes. An empty or non-http one is bad input, not a reason to try another."""
    found: list[str] = []
    for part in resource_manager.split(","):
        address = part.strip().rstrip("/")
        if not address:
            continue
        if not address.startswith(("http://", "https://")):
            raise InvalidArgumentError(
                f"ResourceManager address {redact(address)!r} is not an http(s):// URL "
                f"(several are separated by commas: http://rm1:8088,http://rm2:8088)"
            )
        if address not in found:
            found.append(address)
    if not found:
        raise InvalidArgumentError("no ResourceManager address (http://host:8088) given")
    return found


def call_order(addresses: list[str], remembered: str | None) -> list[str]:
    """The address that answered last first (an RM that was active is likely still), then the
    others in their configured order; each once."""
    if remembered in addresses:
        return [remembered, *(a for a in addresses if a != remembered)]
    return list(addresses)


def after_redirect(remaining: list[str], location: str) -> list[str]:
    """A standby that names the active RM (its redirect's host and port) sends the call there
    next, when that is one of the remaining addresses; an address not configured is never
    followed (a reference decides where its kill goes)."""
    target = _origin(location)
    preferred = [a for a in remaining if _origin(a) == target]
    return preferred + [a for a in remaining if a not in preferred]


def classify(answer: Answer) -> Verdict:
    """What one address's answer means for the call."""
    if answer.status == 0:
        return Verdict("unreachable", f"did not answer ({answer.error})")
    if STANDBY_TEXT in answer.body[:500] or 300 <= answer.status < 400:
        where = f", redirects to {redact(answer.location)}" if answer.location else ""
        return Verdict("standby", f"is a standby ResourceManager (HTTP {answer.status}{where})")
    if answer.status == 404:
        return Verdict("not_found", "does not know it (404)")
    if answer.status >= 500:
        return Verdict("failed", f"failed: HTTP {answer.status} {_excerpt(answer.body)}")
    if answer.status == 401:
        # Unauthenticated: a login the transport could not make would have raised, so this
        # server refused the one given, or asks for a scheme this client does not speak.
        scheme = answer.authenticate.split(" ", 1)[0] or "none named"
        return Verdict(
            "unauthenticated",
            f"refused the request as unauthenticated: HTTP 401 (WWW-Authenticate: {scheme}; "
            f"this client answers {spnego.NEGOTIATE}, i.e. {spnego.MECHANISM})",
        )
    if answer.status >= 400:
        # Denied (403) or a request it will not take: every RM of a cluster shares its
        # configuration, so another address would say the same.
        return Verdict("refused", f"refused: HTTP {answer.status} {_excerpt(answer.body)}")
    try:
        payload = json.loads(answer.body or "{}")
    except ValueError:
        # A ResourceManager still starting may answer with a page instead of JSON.
        return Verdict("failed", f"answered with something not JSON: {_excerpt(answer.body)}")
    if not isinstance(payload, dict):
        return Verdict("failed", f"answered with JSON not an object: {_excerpt(answer.body)}")
    # `/ws/v1/cluster/info` is the one resource a standby serves itself; its haState says.
    ha_state = (payload.get("clusterInfo") or {}).get("haState")
    if ha_state not in (None, "ACTIVE"):
        return Verdict("standby", f"is not active (haState {ha_state})")
    return Verdict("active", "active", payload)


def no_active_message(method: str, path: str, tried: list[tuple[str, str]]) -> str:
    said = "; ".join(f"{redact(address)} {detail}" for address, detail in tried)
    return (
        f"no active YARN ResourceManager for {method} {path} among the job reference's "
        f"resource_manager ({', '.join(redact(a) for a, _ in tried)}; each asked once through "
        f"its REST API): {said}"
    )


def redact(url: str) -> str:
    """An address fit for a message: no user or password, query or fragment."""
    if "://" not in url:
        return url.split("@")[-1].split("?")[0]
    parts = urllib.parse.urlsplit(url)
    port = _origin(url)[2]
    host = f"{parts.hostname or ''}:{port}" if port is not None else parts.hostname or ""
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return (parts.scheme, (parts.hostname or "").lower(), port)


def _excerpt(body: str) -> str:
    return repr(body[:200])


# -- I/O -----------------------------------------------------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect comes back as the answer: it is a standby RM speaking."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _send(method: str, url: str, data: bytes | None, authorization: str | None) -> Answer:
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with _OPENER.open(request, timeout=TIMEOUT_S) as response:
            body = response.read().decode(errors="replace")
            return Answer(
                response.status, body, authenticate=response.headers.get("WWW-Authenticate", "")
            )
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")
        found = exc.headers
        return Answer(
            exc.code,
            body,
            found.get("Location", "") if found else "",
            authenticate=found.get("WWW-Authenticate", "") if found else "",
        )
    except (urllib.error.URLError, OSError) as exc:
        return Answer(0, error=str(getattr(exc, "reason", exc)))


def _default_login() -> spnego.KerberosLogin:
    return spnego.KerberosLogin()


def urllib_transport(
    method: str,
    url: str,
    data: bytes | None,
    login: spnego.LoginSource = _default_login,
) -> Answer:
    """The request; when the server answers 401 offering Negotiate, once more with a
    Kerberos ticket of `login` (resolved only then). At most two requests."""
    answer = _send(method, url, data, None)
    if answer.status != 401 or not spnego.offers_negotiate(answer.authenticate):
        return answer
    who = login()
    header, context = spnego.authorization(url, who)
    answer = _send(method, url, data, header)
    if answer.status != 0 and answer.status < 400:
        spnego.confirm(context, answer.authenticate, who, url)
    return answer


def kerberos_transport(login: spnego.LoginSource) -> Transport:
    """The default transport, logging in as `login` says when a server asks for SPNEGO."""
    return functools.partial(urllib_transport, login=login)


TRANSPORT: Transport = urllib_transport
# The address that last answered as active, per configured list: the next call starts there.
_LAST_ACTIVE: dict[tuple[str, ...], str] = {}


def call(
    resource_manager: str,
    path: str,
    method: str = "GET",
    body: dict[str, Any] | None = None,
    transport: Transport | None = None,
) -> dict[str, Any]:
    """One request to the active ResourceManager among `resource_manager`'s addresses, each
    asked at most once (at most `TIMEOUT_S` each)."""
    addresses = resource_manager_addresses(resource_manager)
    send = transport or TRANSPORT
    data = json.dumps(body).encode() if body is not None else None
    key = tuple(addresses)
    remaining = call_order(addresses, _LAST_ACTIVE.get(key))
    tried: list[tuple[str, str]] = []
    while remaining:  # bounded: one address leaves the list at each turn
        address = remaining.pop(0)
        answer = send(method, f"{address}{path}", data)
        verdict = classify(answer)
        if verdict.kind == "active":
            _LAST_ACTIVE[key] = address
            return verdict.payload or {}
        where = f"{redact(address)}{path}"
        if verdict.kind == "not_found":
            raise JobNotFoundError(f"{where}: the ResourceManager {verdict.detail}")
        if verdict.kind == "unauthenticated":
            # Every RM of a cluster shares its web filter: another would say the same.
            raise ClusterAuthenticationError(
                f"{method} {where}: the ResourceManager {verdict.detail}"
            )
        if verdict.kind == "refused":
            raise ClusterUnavailableError(f"{method} {where}: the ResourceManager {verdict.detail}")
        tried.append((address, verdict.detail))
        if verdict.kind == "standby" and answer.location:
            remaining = after_redirect(remaining, answer.location)
    raise NoActiveResourceManagerError(
        no_active_message(method, path, tried), tuple((redact(a), d) for a, d in tried)
    )


def get(resource_manager: str, path: str, transport: Transport | None = None) -> dict[str, Any]:
    """GET a resource of a ResourceManager's REST API (`/ws/v1/cluster/...`) as JSON."""
    return call(resource_manager, path, transport=transport)


def application(ref: YarnJobRef, transport: Transport | None = None) -> dict[str, Any]:
    """The ResourceManager's record of the reference's application, checked to be this job's
    (`state`, `finalStatus`, `diagnostics`, `currentAppAttemptId`, ...)."""
    path = f"/ws/v1/cluster/apps/{ref.application_id}"
    app: dict[str, Any] = call(ref.resource_manager, path, transport=transport).get("app") or {}
    if not app:
        where = ",".join(map(redact, resource_manager_addresses(ref.resource_manager)))
        raise JobNotFoundError(f"{where}{path}: no application in the answer")
    check_yarn_application(ref, app)
    return app


def tagged_applications(
    resource_manager: str, tag: str, transport: Transport | None = None
) -> list[dict[str, Any]]:
    """The applications the ResourceManager keeps with the application tag `tag` (YARN keeps
    tags lowercased: `tag` is given so)."""
    path = f"/ws/v1/cluster/apps?applicationTags={urllib.parse.quote(tag)}"
    found = call(resource_manager, path, transport=transport)
    return list((found.get("apps") or {}).get("app") or [])


def attempts(ref: YarnJobRef, transport: Transport | None = None) -> list[dict[str, Any]]:
    """The application's attempts, oldest first (a restarted driver is a new attempt)."""
    path = f"/ws/v1/cluster/apps/{ref.application_id}/appattempts"
    found = call(ref.resource_manager, path, transport=transport)
    listed = (found.get("appAttempts") or {}).get("appAttempt") or []
    return sorted(listed, key=lambda a: int(a.get("id", 0)))


def kill(
    ref: YarnJobRef, diagnostics: str | None = None, transport: Transport | None = None
) -> str:
    """Ask the ResourceManager to kill the application (no new attempt follows); returns the
    state it reports. Only after checking that the application is this job's. `diagnostics`
    replaces the ResourceManager's own "killed by user" in the application's record, which
    is what a status shows of an application that ended its own run."""
    application(ref, transport)
    body = {"state": "KILLED"}
    if diagnostics:
        body["diagnostics"] = diagnostics
    path = f"/ws/v1/cluster/apps/{ref.application_id}/state"
    return str(call(ref.resource_manager, path, "PUT", body, transport).get("state", ""))
