"""A real YARN cluster on this machine, for tests and demos: a ResourceManager and a
NodeManager run as plain JVMs from the jars `kafkaspark local jars resolve --with yarn`
fetches from Maven Central (no Hadoop distribution). With `ha=True`, two ResourceManagers
(rm1, rm2) and the ZooKeeper server their elector and state store use (see LocalYarnCluster).

Each daemon gets a configuration folder of its own (yarn_config.py), so that the
multi-host test bed can start the RM and each NM on different hosts. The cluster's layout
(ports, pids) is kept in `<base_dir>/yarn.json`, which lets the CLI's `stop` and `status`
find it again. Containers run as this user with the NodeManager's `JAVA_HOME`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.core.cluster import spnego, yarn_rest
from airflow_provider_kafkaspark.errors import (
    ClusterUnavailableError,
    LocalStackError,
    PortInUseError,
)
from airflow_provider_kafkaspark.spark.jars import find_java, s3a_jars
from kafkaspark_devstack.jars import yarn_classpath
from kafkaspark_devstack.ports import HOST, free_port, port_in_use
from kafkaspark_devstack.process import command_lines, server_running
from kafkaspark_devstack.yarn_config import (
    HaLayout,
    NodeLayout,
    NodeManagerPorts,
    ResourceManagerPorts,
    WebAuth,
    properties_text,
    s3a_site,
    spark_defaults,
    web_spnego_site,
    write_conf_dir,
    zookeeper_cfg,
)

log = logging.getLogger(__name__)

STATE_FILE = "yarn.json"
RESOURCE_MANAGER = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
NODE_MANAGER = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
ZOOKEEPER = "org.apache.zookeeper.server.ZooKeeperServerMain"
RM_IDS = ("rm1", "rm2")
# Hadoop 3.4 predates Java 17's closed modules: its Guice and reflection need these opened.
JAVA17_OPTIONS = (
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.dns=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
)


PACKAGE = "airflow_provider_kafkaspark"


def make_node_python(folder: Path) -> Path:
    """The Python of the cluster's containers: this environment's packages (pyspark,
    confluent-kafka, s3fs: what a node of a real cluster has installed for the driver) but
    not this provider, which reaches the containers with each submit, as on a real cluster.

    A venv whose one `.pth` file names this environment's site-packages. An editable install
    of the provider is itself a `.pth` file there, and Python reads `.pth` files only in its
    own site folders, so it does not follow."""
    python = folder / "bin" / "python"
    if not python.exists():
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(folder)],
            check=True,
            timeout=120,
            capture_output=True,
        )
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = folder / "lib" / version / "site-packages"
    (site / "host-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    if node_python_has_package(python):
        log.warning(
            "%s can import %s (installed in site-packages, not editable): containers will use "
            "that copy instead of the one each submit ships",
            python,
            PACKAGE,
        )
    return python


def node_python_has_package(python: Path) -> bool:
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({PACKAGE!r}) is None)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # From the root folder: `-c` puts the working folder first on sys.path, and a checkout
    # there would answer for the environment.
    done = subprocess.run([str(python), "-c", probe], env=env, cwd="/", timeout=60, check=False)
    return done.returncode == 0


def application_master_pids(app_id: str) -> list[int]:
    """The JVMs of `app_id`'s application master on this host (not the container's launch
    script that started them): what a test or benchmark kills to crash the driver."""
    return [
        pid
        for pid, command in command_lines()
        if command.split(b"\0", 1)[0].endswith(b"/java")
        and b"yarn.ApplicationMaster" in command
        and app_id.encode() in command
    ]


class YarnStartError(LocalStackError):
    """A YARN daemon exited during start-up or the cluster did not become ready in time."""


def java_home() -> Path:
    """The Java installation containers run with (`{{JAVA_HOME}}/bin/java`)."""
    return find_java().resolve().parents[1]


def daemon_command(
    java: Path,
    main_class: str,
    conf_dir: Path,
    log_dir: Path,
    heap_mb: int,
    extra_jars: list[Path] | None = None,
    args: tuple[str, ...] = (),
    java_options: tuple[str, ...] = (),
) -> list[str]:
    jars = [*yarn_classpath(), *(extra_jars or [])]
    classpath = os.pathsep.join([str(conf_dir), *(str(j) for j in jars)])
    return [
        str(java / "bin" / "java"),
        f"-Xmx{heap_mb}m",
        *JAVA17_OPTIONS,
        *java_options,
        "-Djava.net.preferIPv4Stack=true",
        f"-Dyarn.log.dir={log_dir}",
        f"-Dhadoop.log.dir={log_dir}",
        f"-Dlog4j.configuration=file:{conf_dir / 'log4j.properties'}",
        "-cp",
        classpath,
        main_class,
        *args,
    ]


ROLES = ("resourcemanager", "nodemanager")


@dataclass
class _ClusterState:
    host: str  # the ResourceManager's
    rm: ResourceManagerPorts
    memory_mb: int
    vcores: int
    pids: dict[str, int | None] = field(default_factory=dict)
    node_host: str = HOST
    roles: list[str] = field(default_factory=lambda: list(ROLES))
    staging_dir: str | None = None
    # With ResourceManager HA: each RM's ports by id (rm1's are also `rm`), and ZooKeeper's.
    ha_rms: dict[str, ResourceManagerPorts] | None = None
    zk_port: int | None = None
    # The RM's web UI and REST API behind SPNEGO (see WebAuth).
    web_auth: WebAuth | None = None

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> _ClusterState:
        return cls(
            host=raw["host"],
            rm=ResourceManagerPorts(**raw["rm"]),
            memory_mb=raw["memory_mb"],
            vcores=raw["vcores"],
            pids=dict(raw.get("pids", {})),
            node_host=raw.get("node_host", raw["host"]),
            roles=list(raw.get("roles", ROLES)),
            staging_dir=raw.get("staging_dir"),
            ha_rms=(
                {k: ResourceManagerPorts(**v) for k, v in raw["ha_rms"].items()}
                if raw.get("ha_rms")
                else None
            ),
            zk_port=raw.get("zk_port"),
            web_auth=WebAuth(**raw["web_auth"]) if raw.get("web_auth") else None,
        )


class LocalYarnCluster:
    """One ResourceManager and one NodeManager on loopback. A context manager, or
    start()/stop(); the RM's client and web ports are YARN's defaults unless taken.

    On the multi-host bed each host starts its part: `roles=("resourcemanager",)` on one,
    `("nodemanager",)` with `resource_manager=<its host>` on others, `()` (client
    configuration only) where spark-submit runs; all on Hadoop's default ports. With
    `staging_dir` (an `s3a://` URL), spark-submit stages a job's files on S3, where every
    NodeManager reads them, instead of in the submitting host's home folder.

    `ha=True` (one host only) runs ResourceManager HA as users run it: two RMs, rm1 and rm2,
    with automatic failover by their embedded elector, and their state (applications, attempts,
    tokens) in ZooKeeper (ZKRMStateStore) with work-preserving recovery, so an application
    outlives its RM; a standalone ZooKeeper server from the zookeeper jar on YARN's classpath
    runs beside them. rm1 is started first and becomes active; the NodeManager, spark-submit
    (the client configuration) and `web_url` name both."""

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        *,
        memory_mb: int = 6144,
        vcores: int = 4,
        rm_client_port: int | None = None,
        rm_web_port: int | None = None,
        roles: tuple[str, ...] = ROLES,
        resource_manager: str | None = None,
        staging_dir: str | None = None,
        node_python: str | os.PathLike[str] | None = None,
        ha: bool = False,
        web_auth: WebAuth | None = None,
    ) -> None:
        self.base_dir = Path(base_dir).resolve()
        # Where the containers' Python is installed; on the bed, one path for every node.
        self._node_python_dir = (
            Path(node_python).resolve() if node_python else self.base_dir / "node-python"
        )
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._node_web_port = 0
        state_file = self.base_dir / STATE_FILE
        if state_file.is_file():
            self._state = _ClusterState.from_dict(json.loads(state_file.read_text()))
        else:
            unknown = sorted(set(roles) - set(ROLES))
            if unknown:
                raise LocalStackError(f"local YARN: unknown roles {unknown}; known: {ROLES}")
            split = tuple(roles) != ROLES or resource_manager is not None
            if web_auth is not None and (ha or split):
                raise LocalStackError(
                    "local YARN: web_auth (SPNEGO) is for one ResourceManager on this host, "
                    "without HA, roles or resource_manager"
                )
            if ha and split:
                raise LocalStackError(
                    "local YARN: ResourceManager HA (ha=True) runs every daemon on this host; "
                    "it does not take roles or resource_manager"
                )
            ports = (
                ResourceManagerPorts.hadoop_defaults()
                if split
                else ResourceManagerPorts(
                    client=rm_client_port or free_port(),
                    scheduler=free_port(),
                    tracker=free_port(),
                    admin=free_port(),
                    web=rm_web_port or free_port(),
                )
            )
            self._state = _ClusterState(
                host=resource_manager or HOST,
                rm=ports,
                memory_mb=memory_mb,
                vcores=vcores,
                node_host=HOST,
                roles=list(roles),
                staging_dir=staging_dir,
                web_auth=web_auth,
            )
            if ha:
                second = ResourceManagerPorts(
                    client=free_port(),
                    scheduler=free_port(),
                    tracker=free_port(),
                    admin=free_port(),
                    web=free_port(),
                )
                self._state.ha_rms = {RM_IDS[0]: ports, RM_IDS[1]: second}
                self._state.zk_port = free_port()

    # -- what clients need ----------------------------------------------------------------

    @property
    def ha(self) -> bool:
        return bool(self._state.ha_rms)

    @property
    def web_url(self) -> str:
        """The ResourceManager's REST API and UI; with HA each RM's, comma separated in the
        order of their ids (what the REST client and a `spark` connection take)."""
        return ",".join(self.rm_web_url(rm_id) for rm_id in self.resource_manager_ids())

    def resource_manager_ids(self) -> list[str]:
        """rm1, rm2 with HA; else the one RM, "resourcemanager"."""
        return list(self._state.ha_rms) if self._state.ha_rms else ["resourcemanager"]

    def rm_web_url(self, rm_id: str) -> str:
        ports = (self._state.ha_rms or {}).get(rm_id, self._state.rm)
        # Behind SPNEGO the client asks for HTTP/<the URL's host>: the RM's principal's host.
        host = "localhost" if self._state.web_auth else self._state.host
        return f"http://{host}:{ports.web}"

    @property
    def web_auth(self) -> WebAuth | None:
        return self._state.web_auth

    def rest_transport(self) -> yarn_rest.Transport | None:
        """The launcher's own REST calls: with web_auth, logged in as the probe principal."""
        auth = self._state.web_auth
        if auth is None:
            return None
        login = spnego.KerberosLogin(auth.probe_principal, auth.probe_keytab, "local YARN probe")
        return yarn_rest.kerberos_transport(lambda: login)

    def spark_connection_extra(self) -> dict[str, str]:
        """The extra of a `spark` connection (host `yarn`) that submits to this cluster."""
        return {"deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": self.web_url}

    def ha_state(self, rm_id: str) -> str | None:
        """What one RM says it is (`/ws/v1/cluster/info`'s haState: ACTIVE, STANDBY), or None
        while it does not answer."""
        answer = yarn_rest.TRANSPORT("GET", f"{self.rm_web_url(rm_id)}/ws/v1/cluster/info", None)
        if answer.status != 200:
            return None
        try:
            info = json.loads(answer.body).get("clusterInfo") or {}
        except ValueError:
            return None
        return str(info.get("haState") or "") or None

    def active_resource_manager(self) -> str | None:
        """The id of the RM that says it is active, or None."""
        return next((i for i in self.resource_manager_ids() if self.ha_state(i) == "ACTIVE"), None)

    def kill_resource_manager(self, rm_id: str) -> None:
        """SIGKILL one RM (a crash: no clean hand-over), for failover tests."""
        self._kill(rm_id, signal.SIGKILL, 10.0)

    def start_resource_manager(self, rm_id: str, timeout: float = 120.0) -> None:
        """Start one RM of an HA cluster again; wait (bounded) until it answers, as standby
        or active."""
        if not self._daemon_running(rm_id):
            self._spawn_rm(rm_id)
        self._wait(
            timeout, f"ResourceManager {rm_id} answering", lambda: bool(self.ha_state(rm_id))
        )

    def restart_resource_manager(self, timeout: float = 120.0) -> None:
        """The one RM (no HA) crashes (SIGKILL) and starts again on its ports; wait (bounded)
        until it answers. It recovers the applications from its store, and with
        work-preserving recovery their containers go on (`yarn_config.yarn_site`)."""
        if self._state.ha_rms:
            raise YarnStartError("an HA cluster's RMs restart one by one: start_resource_manager")
        self._kill("resourcemanager", signal.SIGKILL, 10.0)
        self._spawn_single_rm()
        self._wait(timeout, "the restarted ResourceManager's REST API", self._rm_answers)

    @property
    def conf_dir(self) -> Path:
        """A client's configuration folder (HADOOP_CONF_DIR for spark-submit)."""
        return self.base_dir / "conf" / "client"

    @property
    def node_python(self) -> Path:
        """The containers' Python (without this provider: see make_node_python)."""
        return self._node_python_dir / "bin" / "python"

    def client_environment(self) -> dict[str, str]:
        """What a spark-submit to this cluster needs: Hadoop's client configuration and Spark's
        cluster-wide defaults (both in one folder), and S3A's classes when it stages on S3."""
        folder = str(self.conf_dir)
        env = {"HADOOP_CONF_DIR": folder, "YARN_CONF_DIR": folder, "SPARK_CONF_DIR": folder}
        if self._state.staging_dir:
            env["SPARK_DIST_CLASSPATH"] = os.pathsep.join(str(j) for j in s3a_jars())
        return env

    # -- lifecycle ------------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> LocalYarnCluster:
        """Start this host's daemons unless they run; wait (bounded) until the
        ResourceManager answers and this host's NodeManager is RUNNING."""
        if self.is_running() and self._daemons():
            return self
        rm, roles, ha = self._state.rm, self._state.roles, self._ha_layout()
        if "resourcemanager" in roles:
            self._check_ports_free()
        host = self._state.host
        tmp = self.base_dir / "tmp"
        staging = self._staging_site()
        write_conf_dir(self.conf_dir, host, rm, tmp, None, staging, ha)
        self._write_spark_defaults()
        try:
            if "resourcemanager" in roles and ha is not None:
                self._start_ha(timeout)
            elif "resourcemanager" in roles:
                # A start is a new cluster: the store of an earlier one would bring its
                # applications back (restart_resource_manager keeps it).
                shutil.rmtree(tmp / "yarn" / "system" / "rmstore", ignore_errors=True)
                self._spawn_single_rm()
                self._wait(timeout, "the ResourceManager's REST API", self._rm_answers)
            if "nodemanager" in roles:
                # Its ports mean nothing to clients: fresh free ones at each start.
                node = NodeLayout(
                    host=self._state.node_host,
                    ports=NodeManagerPorts(
                        containers=free_port(), localizer=free_port(), web=free_port()
                    ),
                    local_dirs=self.base_dir / "nm" / "local",
                    log_dirs=self.base_dir / "nm" / "logs",
                    memory_mb=self._state.memory_mb,
                    vcores=self._state.vcores,
                )
                self._node_web_port = node.ports.web
                nm_conf = write_conf_dir(
                    self.base_dir / "conf" / "nm", host, rm, tmp, node, staging, ha
                )
                extra = s3a_jars() if staging else []
                self._spawn("nodemanager", NODE_MANAGER, nm_conf, heap_mb=512, extra_jars=extra)
                self._wait(timeout, "this host's NodeManager RUNNING", self._node_running)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM each daemon (NodeManager first, which stops its containers; ZooKeeper
        last), then SIGKILL after `timeout` seconds."""
        for name in reversed(self._daemons()):
            self._kill(name, signal.SIGTERM, timeout)
        self._save_state()

    def _kill(self, name: str, sig: signal.Signals, timeout: float) -> None:
        """Signal one daemon's process group; SIGKILL it if still there after `timeout`."""
        pid = self._state.pids.get(name)
        if self._daemon_running(name):
            assert pid is not None
            os.killpg(pid, sig)
            deadline = time.monotonic() + timeout
            while self._daemon_running(name) and time.monotonic() < deadline:
                self._reap(name)
                time.sleep(0.2)
            if self._daemon_running(name):
                log.warning("YARN %s did not stop in %ss: killing it", name, timeout)
                os.killpg(pid, signal.SIGKILL)
                self._reap(name, 10.0)
        self._state.pids[name] = None
        self._save_state()

    def is_running(self) -> bool:
        return all(self._daemon_running(n) for n in self._daemons())

    def _daemons(self) -> list[str]:
        """This host's processes in start order: with HA, ZooKeeper and both RMs in place of
        the one RM."""
        names: list[str] = []
        for role in ROLES:
            if role not in self._state.roles:
                continue
            if role == "resourcemanager" and self._state.ha_rms:
                names += ["zookeeper", *self._state.ha_rms]
            else:
                names.append(role)
        return names

    def running_nodes(self) -> int:
        return len(self._running_nodes())

    def _running_nodes(self) -> list[dict[str, Any]]:
        """The ResourceManager's RUNNING nodes; none while it does not answer."""
        try:
            found = yarn_rest.get(self.web_url, "/ws/v1/cluster/nodes", self.rest_transport())
            nodes = found.get("nodes") or {}
        except ClusterUnavailableError:
            return []
        return [n for n in nodes.get("node", []) if n.get("state") == "RUNNING"]

    def status(self) -> dict[str, Any]:
        found = {
            "running": self.is_running(),
            "resourcemanager": self.web_url,
            "client_port": self._state.rm.client,
            "running_nodes": self.running_nodes() if self.is_running() else 0,
            "pids": dict(self._state.pids),
            "conf_dir": str(self.conf_dir),
            "logs": str(self.base_dir / "logs"),
        }
        if self.ha:
            # Which RM is active now: what a failover test or a person wants to see first.
            found["ha_states"] = {i: self.ha_state(i) for i in self.resource_manager_ids()}
        return found

    def log_tail(self, name: str, lines: int = 30) -> str:
        try:
            text = (self.base_dir / "logs" / f"{name}.out").read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> LocalYarnCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ------------------------------------------------------------------------

    def _ha_layout(self) -> HaLayout | None:
        if not self._state.ha_rms or self._state.zk_port is None:
            return None
        return HaLayout(
            rms=tuple(self._state.ha_rms.items()),
            zk_address=f"{self._state.host}:{self._state.zk_port}",
        )

    def _check_ports_free(self) -> None:
        wanted = [
            (f"{i} {name}", port)
            for i in self.resource_manager_ids()
            for name, port in (
                ("client", (self._state.ha_rms or {}).get(i, self._state.rm).client),
                ("web", (self._state.ha_rms or {}).get(i, self._state.rm).web),
            )
        ]
        if self._state.zk_port is not None:
            wanted.append(("ZooKeeper client", self._state.zk_port))
        for name, port in wanted:
            if port_in_use(port):
                raise PortInUseError(
                    f"local YARN in {self.base_dir}: the {name} port {port} is in use on "
                    f"{self._state.host}"
                )

    def _start_ha(self, timeout: float) -> None:
        """ZooKeeper, then rm1 until it is active, then rm2 until it is standby: one at a time,
        so that which RM is active is known, and two JVMs do not start at once on a small
        machine."""
        assert self._state.zk_port is not None
        zk_dir = self.base_dir / "zookeeper"
        (zk_dir / "data").mkdir(parents=True, exist_ok=True)
        cfg = zk_dir / "zoo.cfg"
        cfg.write_text(zookeeper_cfg(self._state.host, self._state.zk_port, zk_dir / "data"))
        # ZooKeeper logs through the same log4j settings as the daemons.
        zk_conf = write_conf_dir(
            self.base_dir / "conf" / "zookeeper",
            self._state.host,
            self._state.rm,
            self.base_dir / "tmp",
            None,
        )
        self._spawn("zookeeper", ZOOKEEPER, zk_conf, heap_mb=128, args=(str(cfg),))
        self._wait(timeout, "ZooKeeper serving", self._zookeeper_serves)
        first, second = list(self._state.ha_rms or {})
        self._spawn_rm(first)
        self._wait(
            timeout, f"ResourceManager {first} active", lambda: self.ha_state(first) == "ACTIVE"
        )
        self._spawn_rm(second)
        self._wait(
            timeout, f"ResourceManager {second} standby", lambda: self.ha_state(second) == "STANDBY"
        )

    def _spawn_single_rm(self) -> None:
        auth = self._state.web_auth
        rm_conf = write_conf_dir(
            self.base_dir / "conf" / "rm",
            self._state.host,
            self._state.rm,
            self.base_dir / "tmp",
            None,
            web_spnego_site(auth) if auth else None,
        )
        krb5 = (f"-Djava.security.krb5.conf={auth.krb5_conf}",) if auth else ()
        self._spawn("resourcemanager", RESOURCE_MANAGER, rm_conf, heap_mb=512, java_options=krb5)

    def _spawn_rm(self, rm_id: str) -> None:
        folder = self.base_dir / "conf" / rm_id
        conf = write_conf_dir(
            folder,
            self._state.host,
            self._state.rm,
            self.base_dir / "tmp",
            None,
            None,
            self._ha_layout(),
            rm_id,
        )
        self._spawn(rm_id, RESOURCE_MANAGER, conf, heap_mb=512)

    def _zookeeper_serves(self) -> bool:
        """ZooKeeper answers its `srvr` command (a server that accepts connections but has not
        loaded its database does not)."""
        assert self._state.zk_port is not None
        try:
            with socket.create_connection((self._state.host, self._state.zk_port), 2) as sock:
                sock.sendall(b"srvr")
                sock.settimeout(2)
                return b"Zookeeper version" in sock.recv(4096)
        except OSError:
            return False

    def _spawn(
        self,
        name: str,
        main_class: str,
        conf_dir: Path,
        heap_mb: int,
        extra_jars: list[Path] | None = None,
        args: tuple[str, ...] = (),
        java_options: tuple[str, ...] = (),
    ) -> None:
        log_dir = self.base_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        java = java_home()
        env = {**os.environ, "JAVA_HOME": str(java), "HADOOP_CONF_DIR": str(conf_dir)}
        with open(log_dir / f"{name}.out", "ab") as out:
            proc = subprocess.Popen(
                daemon_command(
                    java, main_class, conf_dir, log_dir, heap_mb, extra_jars, args, java_options
                ),
                cwd=self.base_dir,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        self._procs[name] = proc
        self._state.pids[name] = proc.pid
        self._save_state()

    def _staging_site(self) -> dict[str, str]:
        """S3A's settings for a staging folder on S3: the endpoint from the AWS variables,
        and the keys too, since a NodeManager's localizer has no other way to them (on a
        real cluster: the node's instance role)."""
        staging = self._state.staging_dir
        if not staging:
            return {}
        from airflow_provider_kafkaspark.spark.object_storage import s3a_conf

        site = s3a_site(s3a_conf(os.environ, [staging]))
        for key, variable in (
            ("fs.s3a.access.key", "AWS_ACCESS_KEY_ID"),
            ("fs.s3a.secret.key", "AWS_SECRET_ACCESS_KEY"),
        ):
            if os.environ.get(variable):
                site[key] = os.environ[variable]
        return site

    def _node_running(self) -> bool:
        """This host's NodeManager is among the RUNNING nodes."""
        # A NodeManager registers under its host's name, which its address resolves to.
        names = {self._state.node_host, socket.gethostname(), socket.getfqdn(self._state.node_host)}
        web = f":{self._node_web_port}"
        return any(
            n.get("nodeHostName") in names and str(n.get("nodeHTTPAddress", "")).endswith(web)
            for n in self._running_nodes()
        )

    def _write_spark_defaults(self) -> None:
        import pyspark

        python = make_node_python(self.node_python.parents[1])
        defaults = spark_defaults(Path(pyspark.__file__).parent, python)
        if self._state.staging_dir:
            defaults["spark.yarn.stagingDir"] = self._state.staging_dir
        (self.conf_dir / "spark-defaults.conf").write_text(properties_text(defaults))

    def _rm_answers(self) -> bool:
        try:
            yarn_rest.get(self.web_url, "/ws/v1/cluster/info", self.rest_transport())
        except ClusterUnavailableError:
            return False
        return True

    def _wait(self, timeout: float, what: str, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + timeout
        for _ in range(int(timeout / 0.5) + 1):
            for name in self._state.pids:
                if self._state.pids[name] and not self._daemon_running(name):
                    raise YarnStartError(
                        f"YARN {name} exited while waiting for {what}; last lines of its log:\n"
                        f"{self.log_tail(name)}"
                    )
            if ready():
                return
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        raise YarnStartError(
            f"gave up after {timeout:g}s waiting for {what} at {self.web_url}; logs in "
            f"{self.base_dir / 'logs'}"
        )

    def _daemon_running(self, name: str) -> bool:
        return server_running(self._state.pids.get(name), b"hadoop", self._procs.get(name))

    def _reap(self, name: str, timeout: float = 0.0) -> None:
        proc = self._procs.get(name)
        if proc is not None:
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass

    def _save_state(self) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        (self.base_dir / STATE_FILE).write_text(json.dumps(asdict(self._state), indent=2))
