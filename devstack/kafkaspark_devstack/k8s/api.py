"""A few calls to the API server over HTTPS with the admin certificate (urllib and ssl):
what the launcher needs to see the cluster come up, without a client library."""

from __future__ import annotations

import datetime
import json
import ssl
import urllib.error
import urllib.request
from typing import Any

from kafkaspark_devstack.k8s.pki import KeyPair


def client_context(ca_file: str | None, client: KeyPair | None) -> ssl.SSLContext:
    if ca_file:
        context = ssl.create_default_context(cafile=ca_file)
    else:
        # The controller manager's and scheduler's health ports serve a certificate they made
        # themselves: only whether they answer counts there.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if client is not None:
        context.load_cert_chain(str(client.cert), str(client.key))
    return context


def get(url: str, context: ssl.SSLContext | None, timeout: float = 5.0) -> tuple[int, bytes]:
    """The status and body of a GET; status 0 when nothing answered."""
    try:
        with urllib.request.urlopen(url, context=context, timeout=timeout) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (OSError, ssl.SSLError):
        return 0, b""


def get_json(url: str, context: ssl.SSLContext, timeout: float = 5.0) -> dict[str, Any] | None:
    status, body = get(url, context, timeout)
    if status != 200:
        return None
    found = json.loads(body)
    return found if isinstance(found, dict) else None


def node_ready(node: dict[str, Any] | None, since: float | None = None) -> bool:
    """Whether `node` is Ready; with `since` (epoch seconds), by a report of its kubelet made
    after it: a restarted cluster's etcd still holds the Ready of the previous run."""
    if not node:
        return False
    for condition in node.get("status", {}).get("conditions", []):
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            if since is None:
                return True
            beat = datetime.datetime.fromisoformat(
                str(condition.get("lastHeartbeatTime", "")).replace("Z", "+00:00")
            )
            # The API's times have whole seconds.
            return beat.timestamp() >= int(since)
    return False


def delete(url: str, context: ssl.SSLContext, timeout: float = 5.0) -> int:
    """The status of a DELETE; 0 when nothing answered."""
    request = urllib.request.Request(url, method="DELETE")
    try:
        with urllib.request.urlopen(request, context=context, timeout=timeout) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ssl.SSLError):
        return 0
