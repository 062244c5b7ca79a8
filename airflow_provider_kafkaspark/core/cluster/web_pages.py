"""Where a person's browser finds a driver: its Spark UI and its YARN application page, built
from a job reference and what the cluster manager said of it (no I/O here). An empty string
means "no page": the Airflow links show nothing rather than a page that is not there.

YARN: the application page is the ResourceManager's `/cluster/app/{id}` (the first address
of an HA pair: a standby RM's web UI redirects a browser to the active one). The Spark UI is
the application's tracking URL as the ResourceManager reports it: its web proxy in front of
the driver's UI while the application runs, the history server's page after (where one is
configured). Without a tracking URL in the RM's answer, the proxy's address is built the way
the RM builds it when its proxy runs inside it (the default).

A driver this host runs (local or standalone client mode): Spark's UI is off for a `local`
master (`spark/session.py`), and otherwise takes the first free port from `spark.ui.port`
on, which no one records; so the page is given only when the spec fixes it: the UI on and
a fixed, non-zero `spark.ui.port`, at `spark.driver.host` when the spec sets it, else the
driver's host name. (The UI listens on every interface whatever `spark.driver.bindAddress`
says, so the host name reaches it from other hosts, where Spark's own `uiWebUrl` names the
provider's local-mode default, 127.0.0.1.)
A driver on Kubernetes: its pod's UI is not reachable from outside the cluster without a
Service or a port-forward; no page.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef, LocalJobRef, YarnJobRef

DEFAULT_UI_PORT = "4040"


@dataclass(frozen=True)
class DriverPages:
    spark_ui: str = ""
    yarn_application: str = ""


def first_address(resource_manager: str) -> str:
    """The first web address a reference's `resource_manager` names, without a user, query
    or trailing slash (an address may not carry a secret into a link)."""
    first = next((a.strip() for a in resource_manager.split(",") if a.strip()), "")
    parts = urllib.parse.urlsplit(first)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return ""
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def yarn_application_page(resource_manager: str, application_id: str) -> str:
    address = first_address(resource_manager)
    if not address or not application_id:
        return ""
    return f"{address}/cluster/app/{urllib.parse.quote(application_id, safe='')}"


def yarn_proxy_page(resource_manager: str, application_id: str) -> str:
    """The RM's web proxy in front of the application master's UI (Spark's UI for a Spark
    application), where the RM itself runs the proxy."""
    address = first_address(resource_manager)
    if not address or not application_id:
        return ""
    return f"{address}/proxy/{urllib.parse.quote(application_id, safe='')}/"


def usable_url(url: object) -> str:
    """An http(s) URL as given, else empty (the RM says `N/A` or nothing before an
    application master registers, on some versions)."""
    if not isinstance(url, str):
        return ""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return ""
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, ""))


def local_spark_ui(ref: LocalJobRef, spark_conf: Mapping[str, str]) -> str:
    """The Spark UI of a driver this host runs, when the spec fixes its address."""
    local_master = ref.master == "local" or ref.master.startswith("local[")
    # The provider turns the UI off for a local master; Spark's own default is on.
    enabled = spark_conf.get("spark.ui.enabled", "false" if local_master else "true")
    port = str(spark_conf.get("spark.ui.port", "")).strip()
    if enabled.strip().lower() != "true" or not port.isdigit() or int(port) == 0:
        return ""
    host = str(spark_conf.get("spark.driver.host") or ref.host).strip()
    if not host:
        return ""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address
    return f"http://{host}:{int(port)}"


def driver_pages(
    ref: JobRef | None,
    spark_conf: Mapping[str, str] | None = None,
    *,
    tracking_url: str | None = None,
    running: bool = True,
) -> DriverPages:
    """The driver's pages. `tracking_url`: what the ResourceManager reported for a YARN
    application (None: not asked, or no answer). `running`: False once the driver was
    stopped, when a local driver's UI is gone with it."""
    if isinstance(ref, YarnJobRef):
        spark_ui = usable_url(tracking_url) or yarn_proxy_page(
            ref.resource_manager, ref.application_id
        )
        return DriverPages(
            spark_ui=spark_ui,
            yarn_application=yarn_application_page(ref.resource_manager, ref.application_id),
        )
    if isinstance(ref, LocalJobRef) and running:
        return DriverPages(spark_ui=local_spark_ui(ref, spark_conf or {}))
    return DriverPages()
