"""The bootstrap probe: each server of `bootstrap.servers` asked on its own, then judged
against what the others answered (`probe_bootstrap`, `classify_servers`).

confluent_kafka is imported inside the functions only, as everywhere in `core`.
"""

from __future__ import annotations

import concurrent.futures
import socket
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from airflow_provider_kafkaspark.core.kafka.client import (
    BOOTSTRAP_SERVERS,
    FUTURE_GRACE_S,
    MIN_REQUEST_S,
    authentication_failed,
    client_config,
    config_rejected,
    format_address,
    is_authentication_error,
    kafka_error,
    normal_address,
    parse_server,
    split_bootstrap,
)
from airflow_provider_kafkaspark.errors import InvalidInputError

# Without a topic, a metadata request lists every topic of the cluster, which on a large
# cluster is a big answer for a probe. This topic exists on every cluster that had a group;
# asking for it never creates anything since auto-creation is off.
_PROBE_TOPIC = "__consumer_offsets"
_MAX_PROBE_THREADS = 32
# New clients a probe may make for one server, until one gets its answer from that server.
_PROBE_ATTEMPTS = 10
# How long one metadata request may wait before the probe looks for a refused login.
_REFUSAL_CHECK_S = 1.0


# -- results ----------------------------------------------------------------------------------


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
    address = normal_address(other.server)
    return address is not None and address in {normal_address(a) for a in judge.brokers.values()}


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
    about one `timeout_s` in all, not one each. A server that refuses the config's login
    raises `KafkaAuthenticationError`: no server can be judged with credentials it refuses.
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
        deadline = started + timeout_s + MIN_REQUEST_S + FUTURE_GRACE_S
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
        na, nb = normal_address(a), normal_address(b)
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
        if fallback is not None and remaining < MIN_REQUEST_S:
            break
        try:
            answer = _metadata_once(server, config, max(MIN_REQUEST_S, remaining))
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
        raise _ProbeFailed(str(config_rejected(exc))) from None
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            # In slices: a refused login reaches error_cb only, while the request would wait
            # for the whole timeout.
            remaining = deadline - time.monotonic()
            try:
                metadata = admin.list_topics(
                    topic=_PROBE_TOPIC, timeout=max(0.05, min(_REFUSAL_CHECK_S, remaining))
                )
                break
            except KafkaException as exc:
                admin.poll(0)  # serves error_cb: librdkafka's reason for the failure is there
                refused = next((e for e in errors if is_authentication_error(e)), None)
                if refused is not None:
                    raise authentication_failed(
                        config, refused.str(), broker=server, code=refused.code()
                    ) from None
                if time.monotonic() < deadline:
                    continue
                causes = [e for e in errors if e.code() != KafkaError._ALL_BROKERS_DOWN]
                error = causes[-1] if causes else kafka_error(exc)
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
