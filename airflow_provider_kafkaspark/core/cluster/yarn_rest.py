"""A YARN ResourceManager's REST API (`/ws/v1/cluster/apps/...`): an application's record and
a kill. The official SparkSubmitHook has the same two calls as private methods of a submit in
progress; a stop or health task on another host has no such hook, so this module makes them
from a job reference alone."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef, check_yarn_application
from airflow_provider_kafkaspark.errors import ClusterUnavailableError, JobNotFoundError

# States in which the application still runs or is about to.
ACTIVE_STATES = frozenset({"NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING"})
TIMEOUT_S = 10.0


def get(resource_manager: str, path: str) -> dict[str, Any]:
    """GET a resource of a ResourceManager's REST API (`/ws/v1/cluster/...`) as JSON."""
    return _call(f"{resource_manager.rstrip('/')}{path}")


def _call(url: str, method: str = "GET", body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"Accept": "application/json", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            raw = response.read().decode() or "{}"
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise JobNotFoundError(f"{url}: the ResourceManager does not know it (404)") from None
        detail = exc.read().decode(errors="replace")[:300]
        raise ClusterUnavailableError(f"{url}: HTTP {exc.code} {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ClusterUnavailableError(
            f"{url}: the ResourceManager did not answer ({reason})"
        ) from None
    try:
        result: dict[str, Any] = json.loads(raw)
    except ValueError:
        # A ResourceManager still starting may answer with a page instead of JSON.
        raise ClusterUnavailableError(f"{url}: the answer is not JSON: {raw[:200]!r}") from None
    return result


def application(ref: YarnJobRef) -> dict[str, Any]:
    """The ResourceManager's record of the reference's application, checked to be this job's
    (`state`, `finalStatus`, `diagnostics`, `currentAppAttemptId`, ...)."""
    url = f"{ref.resource_manager.rstrip('/')}/ws/v1/cluster/apps/{ref.application_id}"
    app: dict[str, Any] = _call(url).get("app") or {}
    if not app:
        raise JobNotFoundError(f"{url}: no application in the answer")
    check_yarn_application(ref, app)
    return app


def attempts(ref: YarnJobRef) -> list[dict[str, Any]]:
    """The application's attempts, oldest first (a restarted driver is a new attempt)."""
    url = f"{ref.resource_manager.rstrip('/')}/ws/v1/cluster/apps/{ref.application_id}/appattempts"
    found = (_call(url).get("appAttempts") or {}).get("appAttempt") or []
    return sorted(found, key=lambda a: int(a.get("id", 0)))


def kill(ref: YarnJobRef, diagnostics: str | None = None) -> str:
    """Ask the ResourceManager to kill the application (no new attempt follows); returns the
    state it reports. Only after checking that the application is this job's. `diagnostics`
    replaces the ResourceManager's own "killed by user" in the application's record, which
    is what a status shows of an application that ended its own run."""
    application(ref)
    url = f"{ref.resource_manager.rstrip('/')}/ws/v1/cluster/apps/{ref.application_id}/state"
    body = {"state": "KILLED"}
    if diagnostics:
        body["diagnostics"] = diagnostics
    return str(_call(url, "PUT", body).get("state", ""))
