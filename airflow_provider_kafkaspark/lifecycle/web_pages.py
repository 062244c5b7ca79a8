"""A driver's web pages as the cluster manager reports them now (`core/cluster/web_pages.py`
builds them): for a YARN application, one request for its tracking URL. Best effort: pages
are for people, so a manager that does not answer leaves the built addresses, never an
error."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef, YarnJobRef
from airflow_provider_kafkaspark.core.cluster.web_pages import DriverPages, driver_pages
from airflow_provider_kafkaspark.errors import KafkaSparkError

log = logging.getLogger(__name__)


def observed_pages(
    ref: JobRef | None, spark_conf: Mapping[str, str] | None = None, *, running: bool = True
) -> DriverPages:
    tracking_url = None
    if isinstance(ref, YarnJobRef):
        tracking_url = _tracking_url(ref)
    return driver_pages(ref, spark_conf, tracking_url=tracking_url, running=running)


def _tracking_url(ref: YarnJobRef) -> str | None:
    from airflow_provider_kafkaspark.backends import driver_status

    try:
        url = driver_status(ref).detail.get("tracking_url")
    except (KafkaSparkError, OSError) as exc:
        log.info("no tracking URL for %s from its ResourceManager: %s", ref.application_id, exc)
        return None
    except Exception as exc:  # noqa: BLE001 - a link never fails the task that made the job
        log.warning("no tracking URL for %s: %r", ref.application_id, exc)
        return None
    return url if isinstance(url, str) else None
