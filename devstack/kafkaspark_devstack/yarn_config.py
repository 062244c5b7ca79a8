"""The configuration files of a small YARN cluster run from jars (see yarn.py).

Plain functions from a layout to file contents, so that what a ResourceManager or a
NodeManager is told can be read and tested without starting either. Sizes suit a test bed of
a few GiB: containers of 256 MiB steps, no memory checks (a PySpark driver's Python process
counts against its container, and a kill for that would count as a failed attempt).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from airflow_provider_kafkaspark.core.storage.private_file import write_private

# The RM's cap on application attempts: Spark's `spark.yarn.maxAppAttempts` is clamped to it,
# so a job that asks for a few restarts gets them.
MAX_AM_ATTEMPTS = 4
NODE_EXPIRY_MS = 15_000
AM_EXPIRY_MS = 30_000


@dataclass(frozen=True)
class ResourceManagerPorts:
    client: int  # applications are submitted here (spark-submit)
    scheduler: int  # application masters ask for containers here
    tracker: int  # NodeManagers report here
    admin: int
    web: int  # the REST API (/ws/v1/cluster) and the UI

    @classmethod
    def hadoop_defaults(cls) -> ResourceManagerPorts:
        """Hadoop's own ports: what a NodeManager or client on another host assumes when told
        only the ResourceManager's host name (each bed host has its own ports)."""
        return cls(client=8032, scheduler=8030, tracker=8031, admin=8033, web=8088)


@dataclass(frozen=True)
class NodeManagerPorts:
    containers: int  # application masters start containers here
    localizer: int
    web: int


@dataclass(frozen=True)
class NodeLayout:
    """Where one NodeManager keeps its containers' files and logs, and what it offers."""

    host: str
    ports: NodeManagerPorts
    local_dirs: Path
    log_dirs: Path
    memory_mb: int = 6144
    vcores: int = 4


@dataclass(frozen=True)
class HaLayout:
    """ResourceManager HA as Hadoop documents it: the RMs' ids in order (the order clients
    try them) with each one's ports, on one host; ZooKeeper for the embedded elector's
    automatic failover and for the state store (ZKRMStateStore, the store Hadoop recommends
    with HA: it fences a former active RM off by ZooKeeper's ACLs)."""

    rms: tuple[tuple[str, ResourceManagerPorts], ...]
    zk_address: str  # host:port
    cluster_id: str = "kafkaspark-local"

    @property
    def rm_ids(self) -> list[str]:
        return [rm_id for rm_id, _ in self.rms]


# A killed active RM's ZooKeeper session ends after this, and only then does the standby's
# elector win: Hadoop's default (10 s) would leave the cluster without an active RM longer.
ZK_SESSION_TIMEOUT_MS = 5_000
# How soon a client, NodeManager or application master tries the next RM (Hadoop's default
# is the connect retry interval, 30 s).
FAILOVER_SLEEP_BASE_MS = 500
FAILOVER_SLEEP_MAX_MS = 2_000


def site_xml(properties: Mapping[str, str | int | bool]) -> str:
    """A Hadoop `*-site.xml` of `properties`, in the order given."""
    rows = []
    for name, value in properties.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        rows.append(
            f"  <property><name>{escape(name)}</name><value>{escape(text)}</value></property>"
        )
    return '<?xml version="1.0"?>\n<configuration>\n' + "\n".join(rows) + "\n</configuration>\n"


def resource_manager_properties(host: str, ports: ResourceManagerPorts) -> dict[str, str | int]:
    """What every daemon and client of the cluster must agree on: where the RM listens."""
    return {
        "yarn.resourcemanager.hostname": host,
        "yarn.resourcemanager.address": f"{host}:{ports.client}",
        "yarn.resourcemanager.scheduler.address": f"{host}:{ports.scheduler}",
        "yarn.resourcemanager.resource-tracker.address": f"{host}:{ports.tracker}",
        "yarn.resourcemanager.admin.address": f"{host}:{ports.admin}",
        "yarn.resourcemanager.webapp.address": f"{host}:{ports.web}",
    }


def ha_properties(host: str, ha: HaLayout, rm_id: str | None) -> dict[str, str | int | bool]:
    """Where each RM listens (each key suffixed with its id) and how they share the work, for
    every daemon and client; `rm_id` names the RM the file is for (both run on one host, so
    Hadoop cannot tell them apart by their addresses)."""
    properties: dict[str, str | int | bool] = {
        "yarn.resourcemanager.ha.enabled": True,
        "yarn.resourcemanager.cluster-id": ha.cluster_id,
        "yarn.resourcemanager.ha.rm-ids": ",".join(ha.rm_ids),
    }
    for each, ports in ha.rms:
        properties.update(
            {f"{k}.{each}": v for k, v in resource_manager_properties(host, ports).items()}
        )
    properties.update(
        {
            "hadoop.zk.address": ha.zk_address,
            "hadoop.zk.timeout-ms": ZK_SESSION_TIMEOUT_MS,
            "yarn.resourcemanager.ha.automatic-failover.enabled": True,
            "yarn.resourcemanager.ha.automatic-failover.embedded": True,
            # The new active RM reads the applications from the store and lets their
            # containers run on (work-preserving): a failover is not an application's restart.
            "yarn.resourcemanager.recovery.enabled": True,
            "yarn.resourcemanager.work-preserving-recovery.enabled": True,
            "yarn.resourcemanager.store.class": (
                "org.apache.hadoop.yarn.server.resourcemanager.recovery.ZKRMStateStore"
            ),
            "yarn.client.failover-sleep-base-ms": FAILOVER_SLEEP_BASE_MS,
            "yarn.client.failover-sleep-max-ms": FAILOVER_SLEEP_MAX_MS,
        }
    )
    if rm_id is not None:
        properties["yarn.resourcemanager.ha.id"] = rm_id
    return properties


FS_STATE_STORE = "org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore"


def yarn_site(
    host: str,
    ports: ResourceManagerPorts,
    node: NodeLayout | None = None,
    ha: HaLayout | None = None,
    rm_id: str | None = None,
) -> dict[str, str | int | bool]:
    """yarn-site.xml for the RM (node None), or for a NodeManager and the clients of a host;
    with `ha`, for each of the RMs (`rm_id`) and what knows them all (`ports` unused)."""
    where = resource_manager_properties(host, ports) if ha is None else {}
    properties: dict[str, str | int | bool] = {
        **where,
        **(ha_properties(host, ha, rm_id) if ha is not None else {}),
        "yarn.resourcemanager.am.max-attempts": MAX_AM_ATTEMPTS,
        "yarn.scheduler.minimum-allocation-mb": 256,
        "yarn.scheduler.maximum-allocation-mb": node.memory_mb if node else 8192,
        "yarn.scheduler.maximum-allocation-vcores": node.vcores if node else 4,
        "yarn.log-aggregation-enable": False,
    }
    if ha is None:
        # A restarted RM reads the applications from its store (a folder under
        # hadoop.tmp.dir, FileSystemRMStateStore's default) and lets their containers run
        # on; NodeManagers read the second key too, to keep their containers at the resync.
        properties["yarn.resourcemanager.recovery.enabled"] = True
        properties["yarn.resourcemanager.store.class"] = FS_STATE_STORE
    properties["yarn.resourcemanager.work-preserving-recovery.enabled"] = True
    if node is None:
        # The RM declares a silent node lost, and an application master that stopped
        # heartbeating failed, after these (YARN's defaults: 10 minutes each): a lost node's
        # driver is restarted on another node within seconds. A NodeManager's heartbeat comes
        # every second and an application master's every 3 s, so these leave ample margin.
        properties["yarn.nm.liveness-monitor.expiry-interval-ms"] = NODE_EXPIRY_MS
        properties["yarn.am.liveness-monitor.expiry-interval-ms"] = AM_EXPIRY_MS
        return properties
    properties.update(
        {
            "yarn.nodemanager.hostname": node.host,
            "yarn.nodemanager.address": f"{node.host}:{node.ports.containers}",
            "yarn.nodemanager.localizer.address": f"{node.host}:{node.ports.localizer}",
            "yarn.nodemanager.webapp.address": f"{node.host}:{node.ports.web}",
            "yarn.nodemanager.resource.memory-mb": node.memory_mb,
            "yarn.nodemanager.resource.cpu-vcores": node.vcores,
            "yarn.nodemanager.vmem-check-enabled": False,
            "yarn.nodemanager.pmem-check-enabled": False,
            "yarn.nodemanager.local-dirs": str(node.local_dirs),
            "yarn.nodemanager.log-dirs": str(node.log_dirs),
            # A test machine's disk may be fuller than YARN's 90 %, which would mark the
            # node unhealthy and leave every application waiting.
            "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": (
                "99.0"
            ),
            # Keep a finished container's folder a while: its launch script and logs say why
            # a driver failed.
            "yarn.nodemanager.delete.debug-delay-sec": 600,
        }
    )
    return properties


def core_site(tmp_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    # No HDFS: the default file system is the local one; shared state lives on S3.
    return {"fs.defaultFS": "file:///", "hadoop.tmp.dir": str(tmp_dir), **(extra or {})}


@dataclass(frozen=True)
class WebAuth:
    """The ResourceManager's web UI and REST API behind SPNEGO (Kerberos): the RM's HTTP
    principal and keytab, the realm's krb5.conf (for its JVM), and the login the launcher's own
    readiness probes use."""

    principal: str  # HTTP/localhost@REALM
    keytab: str
    krb5_conf: str
    probe_principal: str
    probe_keytab: str


# Hadoop's own web authentication filter: with `type=kerberos`, every page and REST resource
# of the daemon asks for SPNEGO. It needs no Hadoop RPC security (hadoop.security.
# authentication stays `simple`): the RM keeps this filter as configured then
# (RMWebAppUtil.setupSecurityAndFilters swaps in its own only with RPC security on).
AUTH_FILTER_INITIALIZER = "org.apache.hadoop.security.AuthenticationFilterInitializer"


def web_spnego_site(auth: WebAuth) -> dict[str, str]:
    """core-site.xml settings of a daemon whose web server asks for SPNEGO."""
    return {
        "hadoop.http.filter.initializers": AUTH_FILTER_INITIALIZER,
        "hadoop.http.authentication.type": "kerberos",
        "hadoop.http.authentication.kerberos.principal": auth.principal,
        "hadoop.http.authentication.kerberos.keytab": auth.keytab,
        "hadoop.http.authentication.simple.anonymous.allowed": "false",
    }


def s3a_site(spark_conf: Mapping[str, str]) -> dict[str, str]:
    """Hadoop's own S3A settings from Spark's `spark.hadoop.fs.s3a.*` ones (a NodeManager
    and spark-submit read a staging folder on S3 with Hadoop's configuration)."""
    prefix = "spark.hadoop."
    return {k[len(prefix) :]: v for k, v in spark_conf.items() if k.startswith(prefix + "fs.s3a.")}


def capacity_scheduler() -> dict[str, str]:
    """One queue with the whole cluster. No jar ships a default, and without a queue the
    scheduler does not start; application masters may take most of the memory (the default
    10 % would leave a second streaming job waiting)."""
    return {
        "yarn.scheduler.capacity.root.queues": "default",
        "yarn.scheduler.capacity.root.default.capacity": "100",
        "yarn.scheduler.capacity.root.default.maximum-capacity": "100",
        "yarn.scheduler.capacity.maximum-am-resource-percent": "0.8",
    }


LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.out
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
"""


def write_conf_dir(
    conf_dir: Path,
    host: str,
    ports: ResourceManagerPorts,
    tmp_dir: Path,
    node: NodeLayout | None,
    core_extra: Mapping[str, str] | None = None,
    ha: HaLayout | None = None,
    rm_id: str | None = None,
) -> Path:
    """A Hadoop configuration folder for one daemon (or, node None, the RM and clients).
    `core-site.xml` may hold S3 credentials: only its owner reads it."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "yarn-site.xml").write_text(site_xml(yarn_site(host, ports, node, ha, rm_id)))
    write_private(conf_dir / "core-site.xml", site_xml(core_site(tmp_dir, core_extra)))
    (conf_dir / "capacity-scheduler.xml").write_text(site_xml(capacity_scheduler()))
    (conf_dir / "log4j.properties").write_text(LOG4J_PROPERTIES)
    return conf_dir


def spark_defaults(pyspark_home: Path, node_python: Path) -> dict[str, str]:
    """A Spark client's cluster-wide settings for this YARN (`spark-defaults.conf`, as a
    managed cluster keeps in /etc/spark/conf): containers take Spark's jars and the Python of
    the node in place, so a submit uploads only the job's own files."""
    return {
        "spark.yarn.jars": f"local:{pyspark_home / 'jars'}/*",
        "spark.pyspark.python": str(node_python),
        "spark.pyspark.driver.python": str(node_python),
        "spark.driver.memory": "768m",
        "spark.executor.memory": "768m",
        "spark.executor.instances": "1",
        "spark.executor.cores": "1",
    }


def properties_text(properties: Mapping[str, str]) -> str:
    return "".join(f"{key} {value}\n" for key, value in properties.items())


def zookeeper_cfg(host: str, port: int, data_dir: Path) -> str:
    """A standalone ZooKeeper server's zoo.cfg (the server in the zookeeper jar on YARN's
    classpath): sessions may be as short as 2 ticks, `srvr` answers its readiness probe, and
    no admin web server takes a port."""
    return (
        "tickTime=1000\n"
        f"dataDir={data_dir}\n"
        f"clientPort={port}\n"
        f"clientPortAddress={host}\n"
        "maxClientCnxns=0\n"
        "admin.enableServer=false\n"
        "4lw.commands.whitelist=srvr\n"
    )
