"""The `kafkaspark://` Asset scheme: `kafkaspark://savepoints/<job_name>` names the savepoints
of one streaming job. The stop operator emits an event on it after each savepoint, so a DAG
scheduled on it runs once a savepoint exists (a restore, an upgrade, a copy elsewhere).

Registered in the provider's metadata (`get_provider_info`): Airflow calls `sanitize_uri`
on every Asset URI of this scheme, which rejects what no job could be named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow.sdk import Asset, AssetAlias

from airflow_provider_kafkaspark.core.spec.jobspec import valid_job_name

if TYPE_CHECKING:
    from urllib.parse import SplitResult

SCHEME = "kafkaspark"
SAVEPOINTS = "savepoints"
# What a stop operator whose job name is only known once rendered declares: the Asset of the
# rendered name is attached to this alias when the event is emitted.
SAVEPOINTS_ALIAS = "kafkaspark-savepoints"


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """Airflow's check of a `kafkaspark://` URI: `kafkaspark://savepoints/<job_name>`, with a
    job name the job spec would accept."""
    if uri.netloc != SAVEPOINTS:
        raise ValueError(
            f"{SCHEME}:// URIs name savepoints: {SCHEME}://{SAVEPOINTS}/<job_name>, "
            f"not host {uri.netloc!r}"
        )
    job_name = uri.path.removeprefix("/")
    if not valid_job_name(job_name):
        raise ValueError(
            f"{SCHEME}://{SAVEPOINTS}/<job_name>: {job_name!r} is not a job name (letters, "
            "digits, '.', '_', '-', at most 100, not starting with '.', '_' or '-')"
        )
    if uri.query or uri.fragment:
        raise ValueError(f"{SCHEME}://{SAVEPOINTS}/{job_name} takes no query or fragment")
    return uri


def savepoint_asset(job_name: str) -> Asset:
    """The Asset a job's savepoints are announced on; schedule a DAG on it to react."""
    return Asset(
        name=f"kafkaspark-savepoints-{job_name}", uri=f"{SCHEME}://{SAVEPOINTS}/{job_name}"
    )


def create_asset(*, job_name: str) -> Asset:
    """The factory Airflow's provider metadata names (`asset-uris`)."""
    return savepoint_asset(job_name)


def savepoints_alias() -> AssetAlias:
    return AssetAlias(SAVEPOINTS_ALIAS)
