"""A small facade over confluent-kafka for the operators, the CLI and reconciliation.

confluent_kafka is imported inside the functions only: DAG files import this module, and the
scheduler parses them often and under a timeout.

Timeouts are set on purpose. librdkafka's defaults (60 s per request, a reconnect backoff
growing to 10 s, 30 s to set up a connection) let a task that asks a dying cluster for
offsets hang for minutes, and a retrying caller turns that into a restart storm. Every call
here ends within about `timeout_s` (a retried call shares one budget), and fails with a typed
error from `airflow_provider_kafkaspark.errors`.

Client configs may hold SASL passwords: no message or log line of this module contains a
config value, except `bootstrap.servers`.
"""

from __future__ import annotations

import concurrent.futures
import functools
import math
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from airflow_provider_kafkaspark.core.offsets import (
    TopicOffsets,
    TopicPartition,
    Watermarks,
    flatten,
    nest,
)
from airflow_provider_kafkaspark.errors import (
    ConsumerGroupActiveError,
    InvalidInputError,
    KafkaAccessError,
    KafkaRequestError,
    KafkaSparkError,
    KafkaUnavailableError,
    TopicNotFoundError,
)

if TYPE_CHECKING:
    from concurrent.futures import Future

    from confluent_kafka import Consumer, KafkaError, KafkaException
    from confluent_kafka import TopicPartition as KafkaTopicPartition
    from confluent_kafka.admin import AdminClient

T = TypeVar("T")

BOOTSTRAP_SERVERS = "bootstrap.servers"
# The group.id of the consumers that read record timestamps when the config names none. They
# only assign partitions and never commit, so the group never appears on the broker.
DEFAULT_GROUP_ID = "kafkaspark-admin"
DEFAULT_PORT = 9092

# librdkafka enforces the request timeouts itself; this only guards against a future that
# never completes, so that no call can hang for good.
_FUTURE_GRACE_S = 2.0
# A retry or a probe whose budget is nearly spent still gets this long for its request.
_MIN_REQUEST_S = 0.5
# Without a topic, a metadata request lists every topic of the cluster, which on a large
# cluster is a big answer for a probe. This topic exists on every cluster that had a group;
# asking for it never creates anything since auto-creation is off.
_PROBE_TOPIC = "__consumer_offsets"
_MAX_PROBE_THREADS = 32
# New clients a probe may make for one server, until one gets its answer from that server.
_PROBE_ATTEMPTS = 10
# Config keys whose values must never reach a message: the redaction below is a second line
# of defence behind composing messages from error codes and key names only.
_SECRET_KEY = re.compile(r"password|secret|token|credential|jaas|oauthbearer\.config|\.pem$")
_PROTOCOL_PREFIX = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*://")


# -- client configuration ------------------------------------------------------------------


def client_config(config: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
    """`config` plus the timeouts derived from `timeout_s`, for every client this module makes.

    The caller's own settings win, except `allow.auto.create.topics`, which is always off: an
    admin client is a producer to librdkafka, where it defaults to on, so a metadata request
    for a mistyped topic would create that topic on brokers that allow auto-creation.

    librdkafka has no `default.api.timeout.ms`, and its `request.timeout.ms` is a producer
    setting that consumers and admin clients ignore with a warning; its counterpart of both
    is `socket.timeout.ms`, the default of every request and admin call.
    """
    if not isinstance(timeout_s, (int, float)) or not math.isfinite(timeout_s) or timeout_s <= 0:
        raise InvalidInputError(f"timeout_s must be a positive number of seconds, got {timeout_s}")
    servers = config.get(BOOTSTRAP_SERVERS)
    if servers is None:
        raise InvalidInputError(f"the Kafka client config has no {BOOTSTRAP_SERVERS!r} key")
    if not isinstance(servers, str) or not servers.strip():
        raise InvalidInputError(
            f"the Kafka client config's {BOOTSTRAP_SERVERS!r} must be a non-empty string of "
            "comma-separated host:port"
        )
    timeout_ms = max(1, round(timeout_s * 1000))
    backoff_ms = _int_or(config.get("reconnect.backoff.ms"), 100)
    derived: dict[str, Any] = {
        "socket.timeout.ms": min(max(timeout_ms, 10), 300_000),
        # A third of the budget: when one bootstrap server swallows packets, librdkafka must
        # still have time to try another one within the same call.
        "socket.connection.setup.timeout.ms": max(1000, timeout_ms // 3),
        # The default backoff grows to 10 s, longer than a call may last: a broker that came
        # back would be ignored until the call had failed.
        "reconnect.backoff.max.ms": max(backoff_ms, min(10_000, timeout_ms // 4)),
    }
    result = {**derived, **config}
    result["allow.auto.create.topics"] = False
    if not {"log_level", "logger", "debug"} & config.keys():
        # Without this, every failed connection attempt prints a line to stderr. Failures
        # reach the caller as typed errors that carry librdkafka's last error text instead.
        result["log_level"] = 0
    return result


def _int_or(value: object, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return default


def _secret_values(config: Mapping[str, Any]) -> list[str]:
    return sorted(
        {str(v) for k, v in config.items() if _SECRET_KEY.search(k) and len(str(v)) >= 3},
        key=len,
        reverse=True,
    )


def _redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def _config_rejected(exc: BaseException) -> InvalidInputError:
    """librdkafka's complaint about a config, naming keys but never values."""
    text = str(exc.args[0]) if exc.args else str(exc)
    keys = re.findall(r'property "([^"]+)"', text)
    if keys:
        return InvalidInputError(f"the Kafka client config is rejected at key {keys[0]!r}")
    # Values appear in double quotes ("Invalid value "x" for ..."); key names in backquotes.
    unquoted = re.sub(r'"[^"]*"', "...", text)
    return InvalidInputError(f"the Kafka client config is rejected: {unquoted}")


# -- bootstrap servers ------------------------------------------------------------------------


def split_bootstrap(servers: str) -> list[str]:
    """The entries of a `bootstrap.servers` string, trimmed, in order, without repeats."""
    result: list[str] = []
    for entry in servers.split(","):
        entry = entry.strip()
        if entry and entry not in result:
            result.append(entry)
    if not result:
        raise InvalidInputError(f"{BOOTSTRAP_SERVERS!r} names no server")
    return result


def parse_server(server: str) -> tuple[str, int]:
    """`[protocol://]host[:port]` or `[ipv6]:port` as (host, port); the port defaults to 9092."""
    rest = _PROTOCOL_PREFIX.sub("", server.strip())
    host, port_text = rest, ""
    if rest.startswith("["):
        end = rest.find("]")
        if end < 0:
            raise InvalidInputError(f"bootstrap server {server!r}: unclosed '[' of an IPv6 host")
        host, after = rest[1:end], rest[end + 1 :]
        if after:
            if not after.startswith(":"):
                raise InvalidInputError(f"bootstrap server {server!r}: expected ':port' after ']'")
            port_text = after[1:]
    elif rest.count(":") == 1:
        host, port_text = rest.split(":")
    if not host:
        raise InvalidInputError(f"bootstrap server {server!r} has no host")
    if not port_text:
        return host, DEFAULT_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise InvalidInputError(f"bootstrap server {server!r}: port {port_text!r} is not 1-65535")
    return host, int(port_text)


def format_address(host: str, port: int) -> str:
    host = host.lower()
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _normal_address(server: str) -> str | None:
    try:
        return format_address(*parse_server(server))
    except InvalidInputError:
        return None


# -- results ----------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class BrokerAddress:
    node_id: int
    host: str
    port: int

    def __str__(self) -> str:
        return format_address(self.host, self.port)


@dataclass(frozen=True)
class ClusterDescription:
    """What DescribeCluster says. In KRaft mode Kafka does not expose its controllers to
    clients: `controller_id` is then an arbitrary live broker, as the protocol specifies."""

    cluster_id: str | None
    controller_id: int | None
    brokers: list[BrokerAddress]

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster_id": self.cluster_id,
            "controller_id": self.controller_id,
            "brokers": [
                {"node_id": b.node_id, "host": b.host, "port": b.port} for b in self.brokers
            ],
        }


class ProbeStatus(str, Enum):
    OK = "OK"
    UNREACHABLE = "UNREACHABLE"
    NO_METADATA = "NO_METADATA"
    NOT_A_MEMBER = "NOT_A_MEMBER"
    OTHER_CLUSTER = "OTHER_CLUSTER"


@dataclass(frozen=True)
class ServerObservation:
    """What one bootstrap server did when probed on its own: the input of `classify_servers`.

    `connect_error` is None when the TCP connection worked, `metadata_error` None when the
    server answered metadata. `broker_id` is the server's own node id when known,
    `answered_by` the node id of the broker whose metadata answer was received (usually the
    same, see `_ask_metadata`), and `brokers` maps node id to address as that answer lists them.
    """

    server: str
    elapsed_ms: int
    connect_error: str | None = None
    metadata_error: str | None = None
    cluster_id: str | None = None
    broker_id: int | None = None
    brokers: Mapping[int, str] = field(default_factory=dict)
    answered_by: int | None = None

    @property
    def answered(self) -> bool:
        return self.connect_error is None and self.metadata_error is None


@dataclass(frozen=True)
class BootstrapServerStatus:
    server: str
    status: ProbeStatus
    elapsed_ms: int
    reason: str
    broker_id: int | None = None
    cluster_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "status": self.status.value,
            "elapsed_ms": self.elapsed_ms,
            "broker_id": self.broker_id,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class BootstrapReport:
    """Each bootstrap server's status; `cluster_id` and `brokers` are those of the cluster
    that most servers answer for, as the servers found OK list it."""

    servers: list[BootstrapServerStatus]
    cluster_id: str | None
    brokers: list[str]
    elapsed_ms: int = 0

    @property
    def healthy(self) -> bool:
        return any(s.status is ProbeStatus.OK for s in self.servers)

    @property
    def dead(self) -> list[str]:
        return [s.server for s in self.servers if s.status is not ProbeStatus.OK]

    def status_of(self, server: str) -> BootstrapServerStatus:
        for s in self.servers:
            if s.server == server:
                return s
        raise KeyError(server)

    def to_dict(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "cluster_id": self.cluster_id,
            "brokers": list(self.brokers),
            "dead": self.dead,
            "elapsed_ms": self.elapsed_ms,
            "servers": [s.to_dict() for s in self.servers],
        }


# -- bootstrap probe: pure classification ---------------------------------------------------


def classify_servers(observations: Sequence[ServerObservation]) -> BootstrapReport:
    """Each server's status from what all of them answered.

    The cluster is the cluster id most answering servers report (ties: the one named first).
    A server of that cluster is a member when the other answering servers of the cluster list
    its broker id or its address; it is judged by the others because a broker the cluster has
    fenced may still list itself. When the others disagree evenly it counts as a member; a
    server answering alone is judged by its own answer. A server that no answer lists at all
    and whose node id is unknown is no broker's advertised address (an alias or a load
    balancer): it is judged by the broker that answered through it.
    """
    answered = [o for o in observations if o.answered]
    cluster_id = _majority_cluster_id(answered)
    members = [o for o in answered if o.cluster_id == cluster_id]
    statuses: list[BootstrapServerStatus] = []
    ok: list[ServerObservation] = []
    for o in observations:
        if o.connect_error is not None:
            status, reason = ProbeStatus.UNREACHABLE, f"TCP connect failed: {o.connect_error}"
        elif o.metadata_error is not None:
            status = ProbeStatus.NO_METADATA
            reason = f"TCP connect worked, but no metadata answer: {o.metadata_error}"
        elif o.cluster_id != cluster_id:
            status = ProbeStatus.OTHER_CLUSTER
            reason = f"answers for cluster {o.cluster_id}, most servers for {cluster_id}"
        else:
            judges = [m for m in members if m is not o] or [o]
            identified = o.broker_id is not None or any(_lists(m, o) for m in members)
            if identified:
                votes = sum(1 for judge in judges if _lists(judge, o))
                name = f"broker {o.broker_id}" if o.broker_id is not None else o.server
            else:
                votes = sum(1 for judge in judges if o.answered_by in judge.brokers)
                name = f"{o.server} (no broker advertises it; broker {o.answered_by} answered)"
            if votes * 2 >= len(judges):
                status, reason = ProbeStatus.OK, f"{name} of cluster {cluster_id}"
                ok.append(o)
            else:
                status = ProbeStatus.NOT_A_MEMBER
                reason = (
                    f"{name} answered, but {len(judges) - votes} of {len(judges)} "
                    f"servers of cluster {cluster_id} do not list it"
                )
        statuses.append(
            BootstrapServerStatus(
                server=o.server,
                status=status,
                elapsed_ms=o.elapsed_ms,
                reason=reason,
                broker_id=o.broker_id,
                cluster_id=o.cluster_id,
            )
        )
    return BootstrapReport(servers=statuses, cluster_id=cluster_id, brokers=_agreed_brokers(ok))


def _majority_cluster_id(answered: Sequence[ServerObservation]) -> str | None:
    if not answered:
        return None
    counts = Counter(o.cluster_id for o in answered)
    first_seen: dict[str | None, int] = {}
    for i, o in enumerate(answered):
        first_seen.setdefault(o.cluster_id, i)
    return max(counts, key=lambda cid: (counts[cid], -first_seen[cid]))


def _lists(judge: ServerObservation, other: ServerObservation) -> bool:
    if other.broker_id is not None and other.broker_id in judge.brokers:
        return True
    address = _normal_address(other.server)
    return address is not None and address in {_normal_address(a) for a in judge.brokers.values()}


def _agreed_brokers(views: Sequence[ServerObservation]) -> list[str]:
    counts: Counter[int] = Counter()
    addresses: dict[int, str] = {}
    for view in views:
        for node_id, address in view.brokers.items():
            counts[node_id] += 1
            addresses.setdefault(node_id, address)
    return [addresses[n] for n in sorted(counts) if counts[n] * 2 >= len(views)]


# -- bootstrap probe: the network part ------------------------------------------------------


def probe_bootstrap(config: Mapping[str, Any], *, timeout_s: float = 5.0) -> BootstrapReport:
    """Probe each server of `config["bootstrap.servers"]` on its own, all at once.

    Each server gets a TCP connect, then metadata requests from new clients that know only
    that server (with the config's security settings), until one is answered by that server
    itself (see `_ask_metadata`). The probes run in parallel threads, so dead servers cost
    about one `timeout_s` in all, not one each.
    """
    base = client_config(config, timeout_s)
    servers = split_bootstrap(str(base[BOOTSTRAP_SERVERS]))
    probe_config = {
        k: v for k, v in base.items() if k not in {"logger", "error_cb", "stats_cb", "debug"}
    }
    probe_config["log_level"] = 0
    started = time.monotonic()
    executor = concurrent.futures.ThreadPoolExecutor(
        max_workers=min(len(servers), _MAX_PROBE_THREADS), thread_name_prefix="kafka-probe"
    )
    try:
        futures = [executor.submit(_observe, s, probe_config, timeout_s) for s in servers]
        deadline = started + timeout_s + _MIN_REQUEST_S + _FUTURE_GRACE_S
        observations = []
        for server, future in zip(servers, futures, strict=True):
            try:
                observations.append(future.result(max(0.0, deadline - time.monotonic())))
            except concurrent.futures.TimeoutError:
                observations.append(
                    ServerObservation(
                        server,
                        round((time.monotonic() - started) * 1000),
                        metadata_error=f"the probe did not finish within {timeout_s:g}s",
                    )
                )
    finally:
        # A stuck probe thread must not hold up the report; it ends with its own timeout.
        executor.shutdown(wait=False, cancel_futures=True)
    report = classify_servers(observations)
    return replace(report, elapsed_ms=round((time.monotonic() - started) * 1000))


def _observe(server: str, config: Mapping[str, Any], timeout_s: float) -> ServerObservation:
    started = time.monotonic()

    def elapsed_ms() -> int:
        return round((time.monotonic() - started) * 1000)

    try:
        host, port = parse_server(server)
    except InvalidInputError as exc:
        return ServerObservation(server, elapsed_ms(), connect_error=str(exc))
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        return ServerObservation(
            server, elapsed_ms(), connect_error=_describe_os_error(exc, host, timeout_s)
        )
    endpoints = _Endpoints()
    try:
        answer, own = _ask_metadata(server, config, started + timeout_s, endpoints)
    except _ProbeFailed as exc:
        return ServerObservation(server, elapsed_ms(), metadata_error=str(exc))
    broker_id = answer.answered_by if own else None
    if broker_id is None:
        broker_id = next(
            (n for n, a in sorted(answer.brokers.items()) if endpoints.same(a, server)), None
        )
    return ServerObservation(
        server,
        elapsed_ms(),
        cluster_id=answer.cluster_id,
        broker_id=broker_id,
        answered_by=answer.answered_by,
        brokers=answer.brokers,
    )


class _ProbeFailed(Exception):
    pass


@dataclass(frozen=True)
class _Answer:
    cluster_id: str | None
    brokers: dict[int, str]
    # The broker that answered (-1 in librdkafka, None here, for the bootstrap connection,
    # whose node id the client does not know) and the address it was reached at.
    answered_by: int | None
    answered_at: str


class _Endpoints:
    """Whether two host:port name the same endpoint, resolving names once per probe."""

    def __init__(self) -> None:
        self._resolved: dict[str, frozenset[str]] = {}

    def same(self, a: str, b: str) -> bool:
        na, nb = _normal_address(a), _normal_address(b)
        if na is None or nb is None:
            return False
        if na == nb:
            return True
        (host_a, port_a), (host_b, port_b) = parse_server(na), parse_server(nb)
        return port_a == port_b and bool(self._ips(host_a) & self._ips(host_b))

    def _ips(self, host: str) -> frozenset[str]:
        if host not in self._resolved:
            try:
                infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
                self._resolved[host] = frozenset(str(info[4][0]) for info in infos)
            except OSError:
                self._resolved[host] = frozenset()
        return self._resolved[host]


def _ask_metadata(
    server: str, config: Mapping[str, Any], deadline: float, endpoints: _Endpoints
) -> tuple[_Answer, bool]:
    """A metadata answer about `server`, and whether `server` itself gave it.

    Even a new client's first request may go to another broker: its own start-up metadata
    request, which only `server` can answer, teaches it the other brokers, and by the time
    ours is sent it picks any of them. Any answer proves `server` answered that first one;
    asking again with new clients is for an answer from `server` itself, which tells its
    node id and its own view of the cluster.
    """
    fallback: _Answer | None = None
    for _ in range(_PROBE_ATTEMPTS):
        remaining = deadline - time.monotonic()
        if fallback is not None and remaining < _MIN_REQUEST_S:
            break
        try:
            answer = _metadata_once(server, config, max(_MIN_REQUEST_S, remaining))
        except _ProbeFailed:
            if fallback is None:
                raise
            break
        if endpoints.same(answer.answered_at, server):
            return answer, True
        fallback = answer
    assert fallback is not None  # the loop either returned, raised or set it
    return fallback, False


def _metadata_once(server: str, config: Mapping[str, Any], timeout_s: float) -> _Answer:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[KafkaError] = []
    try:
        conf: dict[str, Any] = {**config, BOOTSTRAP_SERVERS: server, "error_cb": errors.append}
        admin = AdminClient(conf)
    except (KafkaException, TypeError, ValueError) as exc:
        raise _ProbeFailed(str(_config_rejected(exc))) from None
    try:
        metadata = admin.list_topics(topic=_PROBE_TOPIC, timeout=timeout_s)
    except KafkaException as exc:
        admin.poll(0)  # serves error_cb: librdkafka's reason for the failure is there
        causes = [e for e in errors if e.code() != KafkaError._ALL_BROKERS_DOWN]
        error = causes[-1] if causes else _kafka_error(exc)
        detail = error.str() if error is not None else str(exc)
        raise _ProbeFailed(f"{detail} (within {timeout_s:.1f}s)") from None
    finally:
        del admin  # destroys the client here, in the probe's thread, not at a later GC
    # librdkafka names a broker "host:port/node-id", "host:port/bootstrap" before it knows.
    answered_at = str(metadata.orig_broker_name or "").rsplit("/", 1)[0]
    return _Answer(
        cluster_id=metadata.cluster_id,
        brokers={b.id: format_address(str(b.host), b.port) for b in metadata.brokers.values()},
        answered_by=metadata.orig_broker_id if metadata.orig_broker_id >= 0 else None,
        answered_at=answered_at,
    )


def _describe_os_error(exc: OSError, host: str, timeout_s: float) -> str:
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve host {host!r}: {exc.strerror}"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return f"no answer within {timeout_s:g}s"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return exc.strerror or type(exc).__name__


# -- errors ---------------------------------------------------------------------------------


def _kafka_error(exc: BaseException) -> KafkaError | None:
    from confluent_kafka import KafkaError

    arg = exc.args[0] if exc.args else None
    return arg if isinstance(arg, KafkaError) else None


@functools.cache
def _codes(*names: str) -> frozenset[int]:
    from confluent_kafka import KafkaError

    # getattr: names differ between confluent-kafka versions (NOT_LEADER_FOR_PARTITION).
    return frozenset(
        code for code in (getattr(KafkaError, n, None) for n in names) if isinstance(code, int)
    )


# Answers of a cluster that is (re)starting or moving leaders: retried within the budget.
_TRANSIENT = (
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR",
    "LEADER_NOT_AVAILABLE",
    "NOT_LEADER_FOR_PARTITION",
    "NOT_LEADER_OR_FOLLOWER",
    "UNSTABLE_OFFSET_COMMIT",
    "_WAIT_COORD",
)
_UNAVAILABLE = (
    "_TRANSPORT",
    "_TIMED_OUT",
    "_TIMED_OUT_QUEUE",
    "_ALL_BROKERS_DOWN",
    "_RESOLVE",
    "_DESTROY",
    "REQUEST_TIMED_OUT",
    "NETWORK_EXCEPTION",
    "BROKER_NOT_AVAILABLE",
    "NOT_CONTROLLER",
    *_TRANSIENT,
)
_NOT_FOUND = (
    "UNKNOWN_TOPIC_OR_PART",
    # What list_offsets answers ("No leaders found") when none of its topics exists.
    "_NOENT",
    "_UNKNOWN_TOPIC",
    "_UNKNOWN_PARTITION",
    "UNKNOWN_TOPIC_ID",
    "TOPIC_EXCEPTION",
)
_ACCESS = (
    "TOPIC_AUTHORIZATION_FAILED",
    "GROUP_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "SASL_AUTHENTICATION_FAILED",
    "UNSUPPORTED_SASL_MECHANISM",
    "ILLEGAL_SASL_STATE",
    "_AUTHENTICATION",
    "_SSL",
)
_GROUP_ACTIVE = (
    "UNKNOWN_MEMBER_ID",
    "ILLEGAL_GENERATION",
    "REBALANCE_IN_PROGRESS",
    "FENCED_INSTANCE_ID",
    "STALE_MEMBER_EPOCH",
)
_BAD_INPUT = ("_INVALID_ARG", "INVALID_GROUP_ID", "INVALID_PARTITIONS", "OFFSET_OUT_OF_RANGE")


class _Failed(Exception):
    """A KafkaException together with what it is about (a partition, a topic, a group)."""

    def __init__(self, exc: KafkaException, subject: str) -> None:
        super().__init__(subject)
        self.exc = exc
        self.subject = subject


# -- the facade -----------------------------------------------------------------------------


class KafkaFacade:
    """Topic, offset, group and cluster questions to one Kafka cluster.

    `config` is a librdkafka client config (it must have `bootstrap.servers`); see
    `client_config` for what is added to it. One admin client is created on first use and
    kept; offsets reads that need a consumer create one per call. Each call ends within about
    `timeout_s` (`record_timestamps` and `commit_group_offsets`, which take two steps, within
    twice that) or raises: `KafkaUnavailableError` when Kafka does not answer in time,
    `TopicNotFoundError`, `KafkaAccessError`, `ConsumerGroupActiveError` or
    `InvalidInputError` when the request cannot succeed, `KafkaRequestError` otherwise.
    """

    def __init__(self, config: Mapping[str, Any], *, timeout_s: float = 10.0) -> None:
        self._config = client_config(config, timeout_s)
        self._timeout_s = float(timeout_s)
        self._bootstrap = str(self._config[BOOTSTRAP_SERVERS]).strip()
        self._secrets = _secret_values(config)
        self._user_error_cb: Callable[[KafkaError], object] | None = self._config.pop(
            "error_cb", None
        )
        self._admin: AdminClient | None = None
        self._lock = threading.Lock()
        self._last_client_error: str | None = None

    @property
    def bootstrap_servers(self) -> str:
        return self._bootstrap

    @property
    def timeout_s(self) -> float:
        return self._timeout_s

    def close(self) -> None:
        """Drop the admin client (librdkafka destroys it with the last reference)."""
        with self._lock:
            self._admin = None

    def __enter__(self) -> KafkaFacade:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- topics and offsets -------------------------------------------------------------------

    def topic_partitions(self, topics: Iterable[str] | None = None) -> dict[str, int]:
        """Partition count of each topic; topics that do not exist are absent, never created.

        Without `topics`, every topic the client may see, internal ones included.
        """
        from confluent_kafka import KafkaException, TopicCollection

        admin = self._admin_client()
        if topics is None:

            def list_all(remaining: float) -> dict[str, int]:
                metadata = admin.list_topics(timeout=remaining)
                return {
                    name: len(t.partitions)
                    for name, t in sorted(metadata.topics.items())
                    if t.error is None or t.partitions
                }

            return self._call("a topic listing", list_all)

        names = sorted({_check_topic(t) for t in topics})
        if not names:
            return {}
        absent = _codes(
            "UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_TOPIC", "UNKNOWN_TOPIC_ID", "TOPIC_EXCEPTION"
        )

        def describe(remaining: float) -> dict[str, int]:
            # DescribeTopics is one request for all topics, and librdkafka sends it with
            # topic auto-creation off whatever the client config says.
            futures = admin.describe_topics(TopicCollection(names), request_timeout=remaining)
            counts: dict[str, int] = {}
            for name in names:
                try:
                    description = futures[name].result(timeout=remaining + _FUTURE_GRACE_S)
                except KafkaException as exc:
                    error = _kafka_error(exc)
                    if error is not None and error.code() in absent:
                        continue
                    raise _Failed(exc, f"topic {name!r}") from None
                counts[name] = len(description.partitions)
            return counts

        return self._call("a topic description", describe)

    def watermarks(
        self, partitions: Iterable[TopicPartition], *, read_committed: bool = False
    ) -> dict[TopicPartition, Watermarks]:
        """Earliest and end offset of each partition, in two batched requests for all.

        With `read_committed`, `high` is the last stable offset (the end a read_committed
        reader such as Spark with `kafka.isolation.level=read_committed` stops at).
        """
        tps = sorted({_check_partition(tp) for tp in partitions})
        if not tps:
            return {}

        def ask(remaining: float) -> dict[TopicPartition, Watermarks]:
            from confluent_kafka.admin import OffsetSpec

            lows = self._list_offsets(
                {tp: OffsetSpec.earliest() for tp in tps},  # type: ignore[no-untyped-call]
                remaining,
                read_committed,
            )
            highs = self._list_offsets(
                {tp: OffsetSpec.latest() for tp in tps},  # type: ignore[no-untyped-call]
                remaining,
                read_committed,
            )
            low = _gather_offsets(lows, remaining)
            high = _gather_offsets(highs, remaining)
            return {tp: Watermarks(low[tp], high[tp]) for tp in tps}

        return self._call("watermarks", ask)

    def offsets_for_times(self, times: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """For each partition, the first offset whose record timestamp is >= the given time
        (epoch milliseconds).

        When no record is that late, the answer is the partition's end offset (high
        watermark), never None: that is where such a record would be written, so the result
        works as an exclusive end of a backfill and as a start that skips everything older.
        A time before the oldest retained record gives the earliest offset.
        """
        for tp, ts in times.items():
            _check_partition(tp)
            if isinstance(ts, bool) or not isinstance(ts, int) or ts < 0:
                raise InvalidInputError(f"{tp}: timestamp {ts!r} is not epoch milliseconds >= 0")
        tps = sorted(times)
        if not tps:
            return {}

        def ask(remaining: float) -> dict[TopicPartition, int]:
            from confluent_kafka.admin import OffsetSpec

            by_time = self._list_offsets(
                {tp: OffsetSpec.for_timestamp(times[tp]) for tp in tps}, remaining, False
            )
            # Asked together with the times, not after: one round trip instead of two.
            ends = self._list_offsets(
                {tp: OffsetSpec.latest() for tp in tps},  # type: ignore[no-untyped-call]
                remaining,
                False,
            )
            found = _gather_offsets(by_time, remaining)
            end = _gather_offsets(ends, remaining)
            return {tp: found[tp] if found[tp] >= 0 else end[tp] for tp in tps}

        return self._call("offsets for times", ask)

    def record_timestamps(
        self, positions: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | None]:
        """Timestamp (epoch ms) of the record at each offset, to turn an offset lag into time.

        None when the offset is at or after the partition's end (nothing to wait for), before
        its earliest retained offset, or the record has no timestamp. When the record at the
        offset is gone (compaction, transaction markers), the next record's timestamp.
        Raises `KafkaUnavailableError` when a readable partition does not answer in time.
        """
        from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, KafkaException
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        for tp, offset in positions.items():
            _check_partition(tp)
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise InvalidInputError(f"{tp}: offset {offset!r} is not an offset >= 0")
        result: dict[TopicPartition, int | None] = {tp: None for tp in positions}
        if not positions:
            return result
        marks = self.watermarks(positions)
        wanted = {
            tp: offset
            for tp, offset in positions.items()
            if marks[tp].low <= offset < marks[tp].high
        }
        if not wanted:
            return result
        # The partition ends without a record (an EOF event), or its offset was deleted since
        # the watermarks were read (an offset reset error): both answer None, without waiting.
        no_record = _codes("_PARTITION_EOF", "_AUTO_OFFSET_RESET", "OFFSET_OUT_OF_RANGE")
        fatal = _codes(*_NOT_FOUND, *_ACCESS)
        consumer = self._consumer()
        try:
            consumer.assign(
                [KafkaTopicPartition(tp.topic, tp.partition, off) for tp, off in wanted.items()]
            )
            pending = set(wanted)
            deadline = time.monotonic() + self._timeout_s
            while pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    missing = ", ".join(str(tp) for tp in sorted(pending)[:10])
                    self._raise_unavailable(
                        "record timestamps", f"no record from partitions {missing}"
                    )
                message = consumer.poll(min(remaining, 0.5))
                if message is None:
                    continue
                topic, partition = message.topic(), message.partition()
                source = (
                    TopicPartition(topic, partition)
                    if topic is not None and partition is not None
                    else None
                )
                error = message.error()
                if error is not None:
                    if source in pending and error.code() in no_record:
                        pending.discard(source)
                    elif error.code() in fatal:
                        raise self._translate(
                            KafkaException(error), "record timestamps", f"partition {source}"
                        )
                    # Other errors (a broker dropping out) are retried by librdkafka until
                    # the deadline.
                    continue
                if source is None or source not in pending:
                    continue
                kind, ts = message.timestamp()
                result[source] = ts if kind != TIMESTAMP_NOT_AVAILABLE and ts >= 0 else None
                pending.discard(source)
                # Stops fetching a partition that has answered.
                consumer.pause([KafkaTopicPartition(source.topic, source.partition)])
        finally:
            consumer.close()
        return result

    # -- consumer groups ------------------------------------------------------------------------

    def group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> TopicOffsets:
        """Committed offsets of a consumer group: all its partitions, or those given.

        Partitions without a committed offset are absent; an unknown group gives {}.
        """
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        _check_group(group_id)
        requested: list[KafkaTopicPartition] | None = None
        if partitions is not None:
            requested = [
                KafkaTopicPartition(tp.topic, tp.partition)
                for tp in sorted({_check_partition(tp) for tp in partitions})
            ]
            if not requested:
                return {}
        admin = self._admin_client()

        def ask(remaining: float) -> TopicOffsets:
            request = ConsumerGroupTopicPartitions(group_id, requested)
            futures = admin.list_consumer_group_offsets([request], request_timeout=remaining)
            answer = futures[group_id].result(timeout=remaining + _FUTURE_GRACE_S)
            found: list[tuple[TopicPartition, int]] = []
            for ktp in answer.topic_partitions or []:
                if ktp.error is not None:
                    raise _Failed(
                        KafkaException(ktp.error),
                        f"group {group_id!r} offset of {ktp.topic}-{ktp.partition}",
                    )
                if ktp.offset >= 0:
                    found.append((TopicPartition(ktp.topic, ktp.partition), ktp.offset))
            return nest(sorted(found))

        return self._call(f"offsets of consumer group {group_id!r}", ask)

    def commit_group_offsets(self, group_id: str, offsets: TopicOffsets) -> None:
        """Set a consumer group's committed offsets (the group must have no active member).

        Every partition is checked to exist first: Kafka applies such a commit partition by
        partition, so one unknown partition would otherwise leave a half-applied commit.
        """
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        _check_group(group_id)
        flat = flatten(offsets)
        for tp, offset in flat.items():
            _check_partition(tp)
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise InvalidInputError(f"{tp}: offset {offset!r} is not an offset >= 0")
        if not flat:
            return
        counts = self.topic_partitions({tp.topic for tp in flat})
        missing = [tp for tp in sorted(flat) if tp.partition >= counts.get(tp.topic, 0)]
        if missing:
            raise TopicNotFoundError(
                f"Kafka at {self._bootstrap}: partitions "
                f"{', '.join(str(tp) for tp in missing[:10])} do not exist; no offset of "
                f"consumer group {group_id!r} was changed"
            )
        admin = self._admin_client()
        request = [
            KafkaTopicPartition(tp.topic, tp.partition, offset)
            for tp, offset in sorted(flat.items())
        ]

        def alter(remaining: float) -> None:
            futures = admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group_id, request)], request_timeout=remaining
            )
            answer = futures[group_id].result(timeout=remaining + _FUTURE_GRACE_S)
            for ktp in answer.topic_partitions or []:
                if ktp.error is not None:
                    raise _Failed(
                        KafkaException(ktp.error),
                        f"group {group_id!r} offset of {ktp.topic}-{ktp.partition}",
                    )

        self._call(f"an offset commit of consumer group {group_id!r}", alter)

    # -- cluster ----------------------------------------------------------------------------------

    def describe_cluster(self) -> ClusterDescription:
        admin = self._admin_client()

        def ask(remaining: float) -> ClusterDescription:
            answer = admin.describe_cluster(request_timeout=remaining).result(
                timeout=remaining + _FUTURE_GRACE_S
            )
            controller = answer.controller
            return ClusterDescription(
                cluster_id=answer.cluster_id,
                controller_id=controller.id if controller is not None else None,
                brokers=sorted(BrokerAddress(n.id, str(n.host), n.port) for n in answer.nodes),
            )

        return self._call("a cluster description", ask)

    # -- internals --------------------------------------------------------------------------------

    def _admin_client(self) -> AdminClient:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        with self._lock:
            if self._admin is None:
                try:
                    conf: dict[str, Any] = {**self._config, "error_cb": self._on_client_error}
                    self._admin = AdminClient(conf)
                except (KafkaException, TypeError, ValueError) as exc:
                    raise _config_rejected(exc) from None
            return self._admin

    def _consumer(self) -> Consumer:
        from confluent_kafka import Consumer, KafkaException

        config = {
            # Fetch less per partition than the 1 MiB default: one record is all we want.
            "fetch.message.max.bytes": 64 * 1024,
            **self._config,
            "group.id": self._config.get("group.id") or DEFAULT_GROUP_ID,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            # An offset deleted under our feet must answer, not silently jump elsewhere.
            "auto.offset.reset": "error",
            # read_committed would stall at an open transaction until the deadline.
            "isolation.level": "read_uncommitted",
            "error_cb": self._on_client_error,
        }
        try:
            return Consumer(config)
        except (KafkaException, TypeError, ValueError) as exc:
            raise _config_rejected(exc) from None

    def _on_client_error(self, error: KafkaError) -> None:
        from confluent_kafka import KafkaError

        if error.code() != KafkaError._ALL_BROKERS_DOWN:
            self._last_client_error = error.str()
        if self._user_error_cb is not None:
            self._user_error_cb(error)

    def _list_offsets(
        self,
        specs: Mapping[TopicPartition, Any],
        remaining: float,
        read_committed: bool,
    ) -> dict[TopicPartition, Future[Any]]:
        from confluent_kafka import IsolationLevel
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        admin = self._admin_client()
        request = {KafkaTopicPartition(tp.topic, tp.partition): spec for tp, spec in specs.items()}
        isolation = (
            IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        )
        futures = admin.list_offsets(request, isolation_level=isolation, request_timeout=remaining)
        return {TopicPartition(k.topic, k.partition): f for k, f in futures.items()}

    def _call(self, what: str, attempt: Callable[[float], T]) -> T:
        """`attempt(seconds left)` until it succeeds, fails for good, or the budget is spent.

        A cluster that just (re)started answers "coordinator loading" or "leader not
        available" for a while; that is retried within the budget rather than reported.
        """
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + self._timeout_s
        delay = 0.1
        while True:
            remaining = max(_MIN_REQUEST_S, deadline - time.monotonic())
            try:
                return attempt(remaining)
            except (KafkaException, _Failed) as failure:
                exc = failure.exc if isinstance(failure, _Failed) else failure
                subject = failure.subject if isinstance(failure, _Failed) else None
                error = _kafka_error(exc)
                transient = error is not None and error.code() in _codes(*_TRANSIENT)
                if transient and time.monotonic() + delay < deadline:
                    time.sleep(delay)
                    delay = min(1.0, delay * 2)
                    continue
                raise self._translate(exc, what, subject) from None
            except concurrent.futures.TimeoutError:
                self._raise_unavailable(what, "no answer")
            finally:
                self._serve_events()

    def _serve_events(self) -> None:
        # error_cb runs only when the client is polled.
        admin = self._admin
        if admin is not None:
            admin.poll(0)

    def _translate(
        self, exc: KafkaException, what: str, subject: str | None = None
    ) -> KafkaSparkError:
        self._serve_events()
        error = _kafka_error(exc)
        where = f"Kafka at {self._bootstrap}"
        if error is None:
            return KafkaRequestError(f"{where}: {what} failed: {self._redact(str(exc))}")
        code, text = error.code(), self._redact(f"{error.str()} ({error.name()})")
        if code in _codes(*_UNAVAILABLE):
            return self._unavailable(what, text)
        if code in _codes(*_NOT_FOUND):
            return TopicNotFoundError(f"{where}: {subject or what}: does not exist: {text}")
        if code in _codes(*_ACCESS):
            return KafkaAccessError(
                f"{where} refused {what}: {text}; check the client's credentials and ACLs "
                "(keys security.protocol, sasl.*, ssl.*)"
            )
        if code in _codes(*_GROUP_ACTIVE):
            return ConsumerGroupActiveError(
                f"{where}: {what}: the group has active members, stop them first: {text}"
            )
        if code in _codes(*_BAD_INPUT):
            return InvalidInputError(f"{where}: {what} ({subject or 'request'}) is invalid: {text}")
        return KafkaRequestError(f"{where}: {what} failed ({subject or 'request'}): {text}")

    def _unavailable(self, what: str, reason: str) -> KafkaUnavailableError:
        last = self._last_client_error
        detail = f"; last client error: {self._redact(last)}" if last else ""
        return KafkaUnavailableError(
            f"Kafka at {self._bootstrap} did not answer {what} within {self._timeout_s:g}s: "
            f"{reason}{detail}"
        )

    def _raise_unavailable(self, what: str, reason: str) -> NoReturn:
        raise self._unavailable(what, reason)

    def _redact(self, text: str) -> str:
        return _redact(text, self._secrets)


def _gather_offsets(
    futures: Mapping[TopicPartition, Future[Any]], remaining: float
) -> dict[TopicPartition, int]:
    from confluent_kafka import KafkaException

    result: dict[TopicPartition, int] = {}
    for tp in sorted(futures):
        try:
            answer = futures[tp].result(timeout=remaining + _FUTURE_GRACE_S)
        except KafkaException as exc:
            raise _Failed(exc, f"partition {tp}") from None
        result[tp] = int(answer.offset)
    return result


def _check_topic(topic: object) -> str:
    if not isinstance(topic, str) or not topic:
        raise InvalidInputError(f"topic name {topic!r} is not a non-empty string")
    return topic


def _check_partition(tp: object) -> TopicPartition:
    if not isinstance(tp, TopicPartition):
        raise InvalidInputError(f"{tp!r} is not a TopicPartition")
    _check_topic(tp.topic)
    if isinstance(tp.partition, bool) or not isinstance(tp.partition, int) or tp.partition < 0:
        raise InvalidInputError(f"topic {tp.topic!r}: partition {tp.partition!r} is not >= 0")
    return tp


def _check_group(group_id: object) -> None:
    if not isinstance(group_id, str) or not group_id:
        raise InvalidInputError(f"consumer group id {group_id!r} is not a non-empty string")
