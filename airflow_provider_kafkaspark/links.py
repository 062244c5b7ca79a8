"""Links from a task instance to where its job can be seen: the driver's Spark UI, its YARN
application page, and the job's page of this provider's Airflow plugin.

As the official providers do: the operator stores what the links need in one XCom
(`LINKS_XCOM_KEY`, written by `persist_links` during the run), and each link reads it back in
`get_link`. In Airflow 3 the worker calls `get_link` as the task ends and stores each link's
URL under the link's own `xcom_key`; the api-server shows that (it never runs this code).
A link with nothing to show is empty (no YARN application for a local driver, a driver UI
whose address no one knows).

`job_page_path` is what the plugin serves a job's page at; the plugin imports it from here.
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator, Context
    from airflow.sdk.types import TaskInstanceKey

    from airflow_provider_kafkaspark.core.cluster.web_pages import DriverPages

LINKS_XCOM_KEY = "kafkaspark_links"
JOBS_PATH = "/kafkaspark/jobs"


def job_page_path(job_name: str) -> str:
    """The job's page, relative to the api-server's base URL."""
    return f"{JOBS_PATH}/{urllib.parse.quote(job_name, safe='')}"


def job_page_url(job_name: str, base_url: str | None, checkpoint: str | None = None) -> str:
    """The job's page under `base_url` (`[api] base_url`, which may hold a path prefix);
    without one, the path alone, which a browser resolves against the UI it came from. The
    checkpoint, when known, tells two jobs of one name apart (as the view's own links do)."""
    if not job_name:
        return ""
    base = (base_url or "").strip().rstrip("/")
    query = f"?{urllib.parse.urlencode({'checkpoint': checkpoint})}" if checkpoint else ""
    return f"{base}{job_page_path(job_name)}{query}"


def link_targets(
    job_name: str, pages: DriverPages, base_url: str | None, checkpoint: str | None = None
) -> dict[str, str]:
    """What `persist_links` stores: one URL per link, empty where there is none."""
    return {
        "spark_ui": pages.spark_ui,
        "yarn_application": pages.yarn_application,
        "job_page": job_page_url(job_name, base_url, checkpoint),
    }


def api_base_url() -> str:
    from airflow.configuration import conf

    return str(conf.get("api", "base_url", fallback="") or "")


def persist_links(context: Context, operator: BaseOperator, targets: dict[str, str]) -> None:
    """Store the links' targets for this task instance; never fails the task."""
    if not operator.do_xcom_push:
        return
    try:
        context["ti"].xcom_push(key=LINKS_XCOM_KEY, value=targets)
    except Exception as exc:  # noqa: BLE001 - a link is not worth a failed task
        operator.log.warning("links not stored: %s", exc)


class _StoredLink(BaseOperatorLink):
    """A link whose URL is one entry of the stored targets."""

    target: ClassVar[str]

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        from airflow.sdk.execution_time.xcom import XCom

        try:
            stored: Any = XCom.get_value(ti_key=ti_key, key=LINKS_XCOM_KEY)
        except Exception:  # noqa: BLE001 - no link rather than an error in the task's end
            return ""
        if not isinstance(stored, dict):
            return ""
        return str(stored.get(self.target) or "")


class SparkUiLink(_StoredLink):
    """The driver's Spark UI: on YARN the application's tracking URL (the RM's proxy while it
    runs), for a driver of the worker's host only where the spec fixes its address."""

    name = "Spark UI"
    target = "spark_ui"


class YarnApplicationLink(_StoredLink):
    """The ResourceManager's page of the driver's YARN application."""

    name = "YARN application"
    target = "yarn_application"


class StreamingJobLink(_StoredLink):
    """The job's page of this provider's Airflow plugin."""

    name = "Streaming job"
    target = "job_page"


def job_links() -> list[BaseOperatorLink]:
    """The links of the operators that start, change or stop a job."""
    return [SparkUiLink(), YarnApplicationLink(), StreamingJobLink()]


LINK_CLASSES = [
    f"{__name__}.{kind.__name__}" for kind in (SparkUiLink, YarnApplicationLink, StreamingJobLink)
]
