"""Final exits: the driver's exit codes that another attempt would only repeat, and how a
driver under YARN ends its own application after one, so that YARN starts no other attempt.

The runner's exit codes (`spark/runner.py`): 0 stopped cleanly or finished, 1 failed, 2
stopped without draining, 3 lease held by a live driver, 4 bad job (spec, code, SQL, topics
or sink schema; not restarted), 5 a standby that no handover reached (`spark/standby.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

# The runner's logger: these lines are the runner's, in the driver log, as before the split.
log = logging.getLogger("kafkaspark.runner")

EXIT_BAD_SPEC = 4  # also `managed.EXIT_BAD_JOB`
EXIT_STANDBY_EXPIRED = 5  # a standby that no handover reached (final, not restarted)
EXIT_LEASE_LOST = 6  # also `managed.EXIT_LEASE_LOST`: another driver took the lease over
# Exits that another attempt would only repeat (the local supervisor's and the Kubernetes
# Job's final exits are these too: core/cluster/restart.FINAL_EXITS).
FINAL_EXIT_CODES = frozenset({EXIT_BAD_SPEC, EXIT_STANDBY_EXPIRED, EXIT_LEASE_LOST})
_FINAL_REASONS = {
    EXIT_LEASE_LOST: "another driver took the lease over",
    EXIT_BAD_SPEC: "bad job",
    EXIT_STANDBY_EXPIRED: "standby expired",
}
RM_CONF_KEYS = (
    "yarn.http.policy",
    "yarn.resourcemanager.webapp.address",
    "yarn.resourcemanager.webapp.https.address",
    "yarn.resourcemanager.hostname",
)


def final_on_yarn(exit_code: int, master: str) -> bool:
    """The driver must end its YARN application itself: Spark's ApplicationMaster leaves a
    failed attempt that is not the last one unregistered, and YARN then runs the same bad job
    again until `spark.yarn.maxAppAttempts` is used up, where the local supervisor would stop
    at the first."""
    return master == "yarn" and exit_code in FINAL_EXIT_CODES


HA_KEYS = ("yarn.resourcemanager.ha.enabled", "yarn.resourcemanager.ha.rm-ids")
# With HA, each RM's address and host are these keys suffixed with its id (`.rm1`).
RM_ID_KEYS = RM_CONF_KEYS[1:]


def ha_rm_ids(conf: Mapping[str, str | None]) -> list[str]:
    """The ResourceManager ids of an HA cluster (`yarn.resourcemanager.ha.rm-ids`), or none."""
    if (conf.get(HA_KEYS[0]) or "").strip().lower() != "true":
        return []
    return [i.strip() for i in (conf.get(HA_KEYS[1]) or "").split(",") if i.strip()]


def resource_manager_url(conf: Mapping[str, str | None]) -> str | None:
    """The ResourceManager's web address from the driver's Hadoop settings (`RM_CONF_KEYS`),
    or None when they name no host; with HA (`HA_KEYS`), each RM's from its id's keys, comma
    separated, as the REST client takes them. A bind-all address (0.0.0.0) is where the RM
    listens, not where a client reaches it: the RM's hostname stands in for it."""
    ids = ha_rm_ids(conf)
    if ids:
        policy = {RM_CONF_KEYS[0]: conf.get(RM_CONF_KEYS[0])}  # one for the cluster
        urls = [
            _one_url(policy | {key: conf.get(f"{key}.{rm_id}") for key in RM_ID_KEYS})
            for rm_id in ids
        ]
        found = [u for u in urls if u]
        return ",".join(found) if found else None
    return _one_url(conf)


def _one_url(conf: Mapping[str, str | None]) -> str | None:
    https = (conf.get("yarn.http.policy") or "").strip().upper() == "HTTPS_ONLY"
    if https:
        key, port = "yarn.resourcemanager.webapp.https.address", 8090
    else:
        key, port = "yarn.resourcemanager.webapp.address", 8088
    hostname = (conf.get("yarn.resourcemanager.hostname") or "").strip()
    address = (conf.get(key) or "").strip()
    host, _, given_port = address.rpartition(":") if ":" in address else (address, "", "")
    if host in ("", "0.0.0.0"):
        host = hostname
    if not host or host == "0.0.0.0":
        return None
    return f"{'https' if https else 'http'}://{host}:{given_port or port}"


def yarn_application(spark: SparkSession, spec: JobSpec) -> YarnJobRef | None:
    """This driver's YARN application as a job reference, or None (logged) when its Hadoop
    settings name no ResourceManager."""
    from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef

    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    conf = {key: hadoop.get(key) for key in (*RM_CONF_KEYS, *HA_KEYS)}
    conf |= {f"{k}.{i}": hadoop.get(f"{k}.{i}") for i in ha_rm_ids(conf) for k in RM_ID_KEYS}
    url = resource_manager_url(conf)
    app_id = spark.sparkContext.applicationId
    if url is None:
        log.error(
            "application %s: the Hadoop settings name no ResourceManager (%s); YARN may "
            "start another attempt of this final exit",
            app_id,
            ", ".join(RM_CONF_KEYS),
        )
        return None
    return YarnJobRef(
        job_name=spec.job_name,
        checkpoint=spec.checkpoint_location,
        application_id=app_id,
        resource_manager=url,
    )


def end_application(ref: YarnJobRef, code: int) -> None:
    """Kill the driver's own application through the ResourceManager, so that no other attempt
    repeats a final exit. An RM out of reach leaves it to YARN's attempts, as before."""
    from airflow_provider_kafkaspark.core.cluster import yarn_rest
    from airflow_provider_kafkaspark.errors import KafkaSparkError

    why = f"kafkaspark: exit {code} ({_FINAL_REASONS.get(code, 'final')})"
    why += " is final; the driver ended its application (see the checkpoint's stopped report)"
    log.warning(
        "ending application %s at %s: exit %d is final and another YARN attempt would only "
        "repeat it",
        ref.application_id,
        ref.resource_manager,
        code,
    )
    try:
        state = yarn_rest.kill(ref, diagnostics=why)
    except KafkaSparkError as exc:
        log.error("could not end application %s, YARN may retry it: %s", ref.application_id, exc)
        return
    log.info("application %s: the ResourceManager reports %s", ref.application_id, state)
