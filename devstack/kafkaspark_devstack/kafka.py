"""A real Apache Kafka cluster in KRaft mode on loopback, for demos, tests and benchmarks.

Each node runs as broker and controller in one JVM (combined mode) with its own ports and
data folder, so a 3-node cluster keeps its controller quorum when one node dies. The
cluster's layout is kept in `<base_dir>/cluster.json`, which lets a later process (the CLI's
`stop` or `status`) find the nodes again; data survives a stop and a restart.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.errors import BrokerStartError, PortInUseError
from airflow_provider_kafkaspark.spark.fast_jvm import fast_java_options
from airflow_provider_kafkaspark.spark.jars import find_java
from kafkaspark_devstack.jars import kafka_classpath
from kafkaspark_devstack.kafka_security import BrokerSecurity
from kafkaspark_devstack.ports import HOST, free_port, port_in_use
from kafkaspark_devstack.process import server_running

log = logging.getLogger(__name__)

STATE_FILE = "cluster.json"
DEFAULT_HEAP = "512m"

_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.kafka.name = kafka
logger.kafka.level = WARN
logger.apache.name = org.apache.kafka
logger.apache.level = WARN
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = INFO
"""


@dataclass
class KafkaNode:
    node_id: int
    port: int
    controller_port: int
    data_dir: str
    pid: int | None = None
    # Where it listens: loopback, a bed host's address, or the address of a local
    # Kubernetes cluster's bridge (where pods reach it).
    host: str = HOST
    # The secured listeners' ports (listener name -> port), none unless the cluster was
    # made with `security`.
    listener_ports: dict[str, int] = field(default_factory=dict)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class _ClusterState:
    cluster_id: str
    nodes: list[KafkaNode]
    broker_config: dict[str, str] = field(default_factory=dict)
    # Secured listeners (name -> security protocol) next to PLAINTEXT, and the JVM system
    # properties they need; kept so that a node restarted by another process has them too.
    listeners: dict[str, str] = field(default_factory=dict)
    system_properties: dict[str, str] = field(default_factory=dict)


def _distinct_free_ports(count: int, host: str, taken: set[int]) -> list[int]:
    """`count` free ports, none in `taken` nor twice: the OS may hand out a port it just
    gave, since nothing holds it between the calls."""
    found: list[int] = []
    for _ in range(count * 20):
        if len(found) == count:
            break
        port = free_port(host)
        if port not in taken and port not in found:
            found.append(port)
    if len(found) < count:
        raise PortInUseError(f"could not find {count} distinct free ports on {host}")
    return found


def _new_cluster_id() -> str:
    # Kafka wants a base64url-encoded 16-byte UUID without padding (22 characters). Like
    # Kafka's own Uuid.randomUuid, never start with '-': the storage tool would read
    # `-t -abc...` as a missing argument followed by a flag.
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


class LocalKafkaCluster:
    """1 to N real Kafka nodes on loopback. Use as a context manager or start()/stop()."""

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        *,
        brokers: int = 1,
        port: int | None = None,
        broker_config: Mapping[str, str] | None = None,
        heap: str = DEFAULT_HEAP,
        jars_dir: Path | None = None,
        broker_jvm_options: list[str] | None = None,
        host: str = HOST,
        security: BrokerSecurity | None = None,
    ) -> None:
        """`security` adds secured listeners (kafka_security.py) to each node, on ports of
        their own; PLAINTEXT stays as it is, for inter-broker traffic and test setup."""
        if brokers < 1:
            raise ValueError(f"brokers must be 1 or more, got {brokers}")
        self.base_dir = Path(base_dir).resolve()
        self.heap = heap
        self.jars_dir = jars_dir
        # Added to the brokers' JVM command of this object only (not kept in the state file).
        self.broker_jvm_options = list(broker_jvm_options or [])
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        existing = self._load_state()
        if existing is not None:
            self._state = existing
            if broker_config:
                self._state.broker_config.update(broker_config)
            if security is not None:
                self._apply_security(security, dict(broker_config or {}))
        else:
            nodes = []
            for i in range(brokers):
                node_id = i + 1
                nodes.append(
                    KafkaNode(
                        node_id=node_id,
                        port=(port + i) if port else free_port(host),
                        controller_port=(port + 100 + i) if port else free_port(host),
                        data_dir=str(self.base_dir / f"node-{node_id}" / "data"),
                        host=host,
                    )
                )
            self._state = _ClusterState(_new_cluster_id(), nodes, dict(broker_config or {}))
            if security is not None:
                self._apply_security(security, dict(broker_config or {}))

    # -- description ---------------------------------------------------------------

    @classmethod
    def attach(cls, base_dir: str | os.PathLike[str]) -> LocalKafkaCluster:
        """The cluster described by `<base_dir>/cluster.json` (started by another process)."""
        path = Path(base_dir).resolve() / STATE_FILE
        if not path.is_file():
            raise BrokerStartError(f"no local Kafka cluster at {path.parent}: {path} is missing")
        return cls(base_dir)

    @property
    def nodes(self) -> list[KafkaNode]:
        return list(self._state.nodes)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self._state.nodes)

    @property
    def listener_names(self) -> list[str]:
        """The secured listeners' names (kafka_security.SSL, MTLS, OAUTH, OAUTH_SSL, GSSAPI,
        SCRAM)."""
        return list(self._state.listeners)

    def listener_protocol(self, name: str) -> str:
        return self._state.listeners[self._known_listener(name)]

    def listener_servers(self, name: str) -> str:
        """The bootstrap servers of secured listener `name` ("host:port,...")."""
        name = self._known_listener(name)
        return ",".join(f"{n.host}:{n.listener_ports[name]}" for n in self._state.nodes)

    def _known_listener(self, name: str) -> str:
        if name.upper() not in self._state.listeners:
            raise KeyError(
                f"no listener {name!r} on the cluster at {self.base_dir}; it has "
                f"{['PLAINTEXT', *self._state.listeners]}"
            )
        return name.upper()

    def node(self, node_id: int) -> KafkaNode:
        for n in self._state.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(f"no node {node_id} in the cluster at {self.base_dir}")

    def is_running(self, node_id: int) -> bool:
        return self._alive(self.node(node_id))

    def status(self) -> dict[str, Any]:
        return {
            "base_dir": str(self.base_dir),
            "cluster_id": self._state.cluster_id,
            "bootstrap_servers": self.bootstrap_servers,
            "nodes": [
                {
                    "node_id": n.node_id,
                    "address": n.address,
                    "controller_port": n.controller_port,
                    "pid": n.pid,
                    "running": self._alive(n),
                    "data_dir": n.data_dir,
                    "listeners": {
                        name: f"{n.host}:{port}" for name, port in n.listener_ports.items()
                    },
                }
                for n in self._state.nodes
            ],
        }

    # -- lifecycle -------------------------------------------------------------------

    def start(self, timeout: float = 90.0) -> LocalKafkaCluster:
        """Format new nodes, start every node that is not running, wait until all answer."""
        java = find_java()
        classpath = kafka_classpath(self.jars_dir)
        to_start = [n for n in self._state.nodes if not self._alive(n)]
        for n in to_start:
            ports = [(n.port, "listener"), (n.controller_port, "controller")]
            ports += [(p, f"{name} listener") for name, p in n.listener_ports.items()]
            for port, what in ports:
                if port_in_use(port, n.host):
                    raise PortInUseError(
                        f"port {port} ({what} of Kafka node {n.node_id}) is already in use: "
                        f"stop what holds it or choose another port (--port)"
                    )
        try:
            for n in to_start:
                self._start_node(n, java, classpath)
            self._save_state()
            self.wait_ready([n.node_id for n in self._state.nodes], timeout=timeout)
        except BaseException:
            # Nodes this call started must not outlive a start that failed.
            for n in to_start:
                if self._alive(n):
                    self._signal_and_wait(n, signal.SIGKILL, 10.0)
                n.pid = None
            self._save_state()
            raise
        return self

    def start_broker(self, node_id: int, timeout: float = 90.0) -> None:
        """(Re)start one node on its existing data folder and wait until it rejoins."""
        n = self.node(node_id)
        if self._alive(n):
            return
        if port_in_use(n.port, n.host):
            raise PortInUseError(
                f"port {n.port} (listener of Kafka node {node_id}) is already in use"
            )
        self._start_node(n, find_java(), kafka_classpath(self.jars_dir))
        self._save_state()
        self.wait_ready([node_id], timeout=timeout)

    def stop_broker(self, node_id: int, timeout: float = 30.0) -> None:
        """Graceful stop (SIGTERM: controlled shutdown), forced after `timeout` seconds."""
        n = self.node(node_id)
        self._signal_and_wait(n, signal.SIGTERM, timeout)
        n.pid = None
        self._save_state()

    def kill_broker(self, node_id: int) -> None:
        """SIGKILL one node, as a crash would."""
        n = self.node(node_id)
        self._signal_and_wait(n, signal.SIGKILL, 10.0)
        n.pid = None
        self._save_state()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop every node: all get SIGTERM at once, the stragglers SIGKILL."""
        running = [n for n in self._state.nodes if self._alive(n)]
        for n in running:
            self._send(n, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for n in running:
            self._wait_exit(n, max(0.0, deadline - time.monotonic()))
        for n in running:
            if self._alive(n):
                log.warning("Kafka node %s did not stop in %ss: killing it", n.node_id, timeout)
                self._signal_and_wait(n, signal.SIGKILL, 10.0)
            n.pid = None
        self._save_state()

    def wait_ready(self, node_ids: list[int], timeout: float = 90.0) -> None:
        """Until each node in `node_ids` answers a metadata request itself and lists itself.

        Asking the node directly matters after a restart: the other nodes keep listing a
        dead broker until its session times out, so the cluster's view alone proves nothing.
        """
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        missing = set(node_ids)
        while missing:
            for node_id in sorted(missing):
                if not self._alive(self.node(node_id)):
                    raise BrokerStartError(
                        f"Kafka node {node_id} exited during start-up; "
                        f"last lines of {self.log_file(node_id)}:\n{self.log_tail(node_id)}"
                    )
                # A new client each time: a client that already knows the other brokers may
                # send its next request to one of them instead.
                admin = AdminClient(
                    {"bootstrap.servers": self.node(node_id).address, "log_level": 0}
                )
                try:
                    metadata = admin.list_topics(timeout=1)
                except Exception:  # noqa: BLE001 - not answering yet is the normal case here
                    continue
                if metadata.orig_broker_id == node_id and node_id in metadata.brokers:
                    missing.discard(node_id)
            if missing and time.monotonic() > deadline:
                raise BrokerStartError(
                    f"Kafka nodes {sorted(missing)} did not answer metadata within {timeout}s; "
                    f"see {self.base_dir}/node-*/server.log"
                )
            if missing:
                time.sleep(0.3)
        self._wait_partition_leaders(deadline, timeout)

    def _wait_partition_leaders(self, deadline: float, timeout: float) -> None:
        """Until every partition has a live leader: a restarted broker answers metadata
        before it leads its partitions again, and offset requests fail until it does."""
        from confluent_kafka.admin import AdminClient

        live = {n.node_id for n in self._state.nodes if self._alive(n)}
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        while True:
            leaderless: list[str] = []
            try:
                metadata = admin.list_topics(timeout=2)
                for topic in metadata.topics.values():
                    for partition in topic.partitions.values():
                        if partition.error is not None or partition.leader not in live:
                            leaderless.append(f"{topic.topic}-{partition.id}")
            except Exception:  # noqa: BLE001 - retried until the deadline
                leaderless = ["(no metadata)"]
            if not leaderless:
                return
            if time.monotonic() > deadline:
                raise BrokerStartError(
                    f"partitions without a live leader {timeout}s after start: "
                    f"{leaderless[:5]}; see {self.base_dir}/node-*/server.log"
                )
            time.sleep(0.3)

    def create_topic(self, name: str, partitions: int, timeout: float = 60.0) -> bool:
        """Create `name` with `partitions`, replicated on up to three brokers; False when it
        exists already (its partitions are left as they are)."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        replication = min(3, len(self._state.nodes))
        future = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=replication)],
            operation_timeout=timeout,
        )[name]
        try:
            future.result(timeout + 10)
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return False
            raise BrokerStartError(
                f"topic {name} not created on {self.bootstrap_servers}: {exc}"
            ) from exc
        return True

    def __enter__(self) -> LocalKafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- logs --------------------------------------------------------------------------

    def log_file(self, node_id: int) -> Path:
        return self.base_dir / f"node-{node_id}" / "server.log"

    def log_tail(self, node_id: int, lines: int = 20) -> str:
        try:
            text = self.log_file(node_id).read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    # -- internals --------------------------------------------------------------------

    def _node_config(self, n: KafkaNode) -> dict[str, str]:
        count = len(self._state.nodes)
        voters = ",".join(f"{m.node_id}@{m.host}:{m.controller_port}" for m in self._state.nodes)
        secured = "".join(
            f",{name}://{n.host}:{n.listener_ports[name]}" for name in self._state.listeners
        )
        protocols = "".join(f",{name}:{proto}" for name, proto in self._state.listeners.items())
        config = {
            "process.roles": "broker,controller",
            "node.id": str(n.node_id),
            "controller.quorum.voters": voters,
            "listeners": (
                f"PLAINTEXT://{n.host}:{n.port},CONTROLLER://{n.host}:{n.controller_port}{secured}"
            ),
            "advertised.listeners": f"PLAINTEXT://{n.host}:{n.port}{secured}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": (
                f"CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT{protocols}"
            ),
            "log.dirs": n.data_dir,
            "num.partitions": "1",
            "offsets.topic.replication.factor": str(min(3, count)),
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": str(min(3, count)),
            "transaction.state.log.min.isr": str(min(2, count)),
            "transaction.state.log.num.partitions": "10",
            "share.coordinator.state.topic.replication.factor": str(min(3, count)),
            "share.coordinator.state.topic.min.isr": str(min(2, count)),
            "group.initial.rebalance.delay.ms": "0",
            # No time-based retention by default: the example events carry event times
            # from the past, which time retention would delete within minutes. Topics that
            # test retention set retention.ms themselves.
            "log.retention.ms": "-1",
        }
        config.update(self._state.broker_config)
        return config

    def _start_node(self, n: KafkaNode, java: Path, classpath: str) -> None:
        node_dir = self.base_dir / f"node-{n.node_id}"
        node_dir.mkdir(parents=True, exist_ok=True)
        props = node_dir / "server.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in self._node_config(n).items()))
        log4j = node_dir / "log4j2.properties"
        log4j.write_text(_LOG4J2)
        jvm = [
            str(java),
            f"-Xmx{self.heap}",
            "-XX:+UseG1GC",
            *fast_java_options("kafka", self.jars_dir),
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={node_dir}",
            "-cp",
            classpath,
        ]
        if not (Path(n.data_dir) / "meta.properties").is_file():
            fmt = subprocess.run(
                [
                    *jvm,
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    self._state.cluster_id,
                    "-c",
                    str(props),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if fmt.returncode != 0:
                raise BrokerStartError(
                    f"formatting Kafka node {n.node_id} data dir {n.data_dir} failed: "
                    f"{(fmt.stderr or fmt.stdout).strip()[-2000:]}"
                )
        with open(node_dir / "server.log", "ab") as out:
            proc = subprocess.Popen(
                [
                    *jvm,
                    *(f"-D{k}={v}" for k, v in self._state.system_properties.items()),
                    *self.broker_jvm_options,
                    "kafka.Kafka",
                    str(props),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                # Its own session: a CLI-started cluster outlives the CLI, and a Ctrl-C
                # in the caller's terminal does not hit the brokers.
                start_new_session=True,
            )
        self._procs[n.node_id] = proc
        n.pid = proc.pid
        log.info("started Kafka node %s (pid %s) on %s", n.node_id, proc.pid, n.address)

    def _alive(self, n: KafkaNode) -> bool:
        return server_running(n.pid, b"kafka.Kafka", self._procs.get(n.node_id))

    def _send(self, n: KafkaNode, sig: signal.Signals) -> None:
        if n.pid and self._alive(n):
            try:
                os.kill(n.pid, sig)
            except ProcessLookupError:
                pass

    def _wait_exit(self, n: KafkaNode, timeout: float) -> bool:
        proc = self._procs.get(n.node_id)
        deadline = time.monotonic() + timeout
        while self._alive(n):
            if proc is not None and proc.poll() is not None:
                break
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        if proc is not None:
            proc.wait()  # reap our own child so it does not linger as a zombie
            self._procs.pop(n.node_id, None)
        return True

    def _signal_and_wait(self, n: KafkaNode, sig: signal.Signals, timeout: float) -> None:
        self._send(n, sig)
        if not self._wait_exit(n, timeout) and sig != signal.SIGKILL:
            log.warning("Kafka node %s did not stop in %ss: killing it", n.node_id, timeout)
            self._send(n, signal.SIGKILL)
            self._wait_exit(n, 10.0)

    def _load_state(self) -> _ClusterState | None:
        path = self.base_dir / STATE_FILE
        if not path.is_file():
            return None
        raw = json.loads(path.read_text())
        return _ClusterState(
            cluster_id=raw["cluster_id"],
            nodes=[KafkaNode(**n) for n in raw["nodes"]],
            broker_config=raw.get("broker_config", {}),
            listeners=raw.get("listeners", {}),
            system_properties=raw.get("system_properties", {}),
        )

    def _apply_security(self, security: BrokerSecurity, explicit: dict[str, str]) -> None:
        """Record `security`'s listeners, their settings (a setting the caller gave in
        `broker_config` wins) and system properties; ports for listeners a node lacks."""
        self._state.listeners = security.listeners()
        self._state.broker_config.update(
            {k: v for k, v in security.broker_config().items() if k not in explicit}
        )
        self._state.system_properties = security.system_properties()
        taken = {p for n in self._state.nodes for p in (n.port, n.controller_port)}
        taken |= {p for n in self._state.nodes for p in n.listener_ports.values()}
        for n in self._state.nodes:
            missing = [name for name in self._state.listeners if name not in n.listener_ports]
            ports = _distinct_free_ports(len(missing), n.host, taken)
            n.listener_ports.update(zip(missing, ports, strict=True))
            taken.update(ports)

    def _save_state(self) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        path = self.base_dir / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self._state), indent=2))
        tmp.replace(path)
