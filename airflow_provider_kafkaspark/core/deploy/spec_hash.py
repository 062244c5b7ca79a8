"""A deployment's spec hash: stable across hosts and runs, over what decides the job's
behaviour: the spec (without the connection's servers and client settings, and with each
local `python_path` entry replaced by a digest of its content), the digest of the
transformation's module when it is found outside `python_path`, and the Spark version."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

# Fields a spec carries that are not the job's own: the connection's, a standby's.
_NOT_THE_JOBS = ("kafka_config", "standby_token", "standby_timeout_s")


def hashed_view(spec: Mapping[str, Any], code_digests: Mapping[str, str]) -> dict[str, Any]:
    """What the hash covers: the spec without connection and standby fields, python_path
    entries replaced by their content digests (`code_digests`: entry -> digest; an entry
    without one, a URL, is hashed by its text)."""
    view = {k: v for k, v in spec.items() if k not in _NOT_THE_JOBS}
    source = dict(view.get("source") or {})
    source.pop("bootstrap_servers", None)
    view["source"] = source
    view["python_path"] = [code_digests.get(e, e) for e in spec.get("python_path") or ()]
    return view


def spec_hash(
    spec: Mapping[str, Any],
    code_digests: Mapping[str, str],
    *,
    module_digest: str | None,
    spark_version: str | None,
    restart_nonce: str | None = None,
) -> str:
    """`sha256:<hex>` over the hashed view, the module digest and the Spark version; a
    restart nonce (as the Flink Kubernetes Operator's `restartNonce`) makes an unchanged spec
    a new one, so that a scheduled window restarts it."""
    payload: dict[str, Any] = {
        "spec": hashed_view(spec, code_digests),
        "module": module_digest,
        "spark": spark_version,
    }
    if restart_nonce:
        payload["restart_nonce"] = restart_nonce
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def recorded_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The spec as the deployment records it: without the connection's client settings
    (they may hold secrets) or standby fields."""
    return {k: v for k, v in spec.items() if k not in _NOT_THE_JOBS}
