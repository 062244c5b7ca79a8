"""What the Kafka facade, the bootstrap probe and the exactly-once sink share: client configs,
bootstrap servers, secret redaction and the classification of librdkafka's errors.

confluent_kafka is imported inside the functions only: DAG files import the modules that use
this one, and the scheduler parses them often and under a timeout.

Timeouts are set on purpose. librdkafka's defaults (60 s per request, a reconnect backoff
growing to 10 s, 30 s to set up a connection) let a task that asks a dying cluster for
offsets hang for minutes, and a retrying caller turns that into a restart storm.

Client configs may hold SASL passwords: no message or log line built here contains a config
value, except `bootstrap.servers`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.core.kafka.security import describe, is_secret_key
from airflow_provider_kafkaspark.errors import InvalidInputError, KafkaAuthenticationError

if TYPE_CHECKING:
    from confluent_kafka import KafkaError

BOOTSTRAP_SERVERS = "bootstrap.servers"
DEFAULT_PORT = 9092

# librdkafka enforces the request timeouts itself; this only guards against a future that
# never completes, so that no call can hang for good.
FUTURE_GRACE_S = 2.0
# A retry or a probe whose budget is nearly spent still gets this long for its request.
MIN_REQUEST_S = 0.5
_PROTOCOL_PREFIX = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*://")


# -- client configuration ------------------------------------------------------------------


def client_config(config: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
    """`config` plus the timeouts derived from `timeout_s`, for every client the facade and
    the probe make.

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


def secret_values(config: Mapping[str, Any]) -> list[str]:
    return sorted(
        {str(v) for k, v in config.items() if is_secret_key(str(k)) and len(str(v)) >= 3},
        key=len,
        reverse=True,
    )


def redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def config_rejected(exc: BaseException) -> InvalidInputError:
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


def normal_address(server: str) -> str | None:
    try:
        return format_address(*parse_server(server))
    except InvalidInputError:
        return None


# -- errors ---------------------------------------------------------------------------------


def kafka_error(exc: BaseException) -> KafkaError | None:
    from confluent_kafka import KafkaError

    arg = exc.args[0] if exc.args else None
    return arg if isinstance(arg, KafkaError) else None


@functools.cache
def codes(*names: str) -> frozenset[int]:
    from confluent_kafka import KafkaError

    # getattr: names differ between confluent-kafka versions (NOT_LEADER_FOR_PARTITION).
    return frozenset(
        code for code in (getattr(KafkaError, n, None) for n in names) if isinstance(code, int)
    )


# Answers of a cluster that is (re)starting or moving leaders: retried within the budget.
TRANSIENT = (
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR",
    "LEADER_NOT_AVAILABLE",
    "NOT_LEADER_FOR_PARTITION",
    "NOT_LEADER_OR_FOLLOWER",
    "UNSTABLE_OFFSET_COMMIT",
    "_WAIT_COORD",
    # A partition just added or moved: the broker asked has not yet caught up with its
    # leader's epoch (Kafka's own clients retry these; seen in a CI run right after a topic's
    # partitions were added).
    "UNKNOWN_LEADER_EPOCH",
    "FENCED_LEADER_EPOCH",
)
# A group's coordinator moved: librdkafka's admin client keeps the coordinator it found and
# asks it again (librdkafka PR #3847, not merged), so a retry through the same client is
# answered the same way until the client is replaced. Checked before TRANSIENT.
COORDINATOR_MOVED = ("NOT_COORDINATOR",)
UNAVAILABLE = (
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
    *TRANSIENT,
)
NOT_FOUND = (
    "UNKNOWN_TOPIC_OR_PART",
    # What list_offsets answers ("No leaders found") when none of its topics exists.
    "_NOENT",
    "_UNKNOWN_TOPIC",
    "_UNKNOWN_PARTITION",
    "UNKNOWN_TOPIC_ID",
    "TOPIC_EXCEPTION",
)
# librdkafka reports a refused login through error_cb, not to the pending request, which
# waits for its timeout: callers watch error_cb for these (`authentication_failed`).
AUTHENTICATION = (
    "SASL_AUTHENTICATION_FAILED",
    "UNSUPPORTED_SASL_MECHANISM",
    "ILLEGAL_SASL_STATE",
    "_AUTHENTICATION",
)
ACCESS = (
    "TOPIC_AUTHORIZATION_FAILED",
    "GROUP_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    *AUTHENTICATION,
    "_SSL",
)
# Refusals of the job's principal that a restart cannot heal (the same login gets the same
# answer): Kafka's error names, as librdkafka reports them, and the Java client's exceptions.
AUTHORIZATION_REFUSALS = (
    "TOPIC_AUTHORIZATION_FAILED",
    "GROUP_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    "TopicAuthorizationException",
    "GroupAuthorizationException",
    "ClusterAuthorizationException",
    "TransactionalIdAuthorizationException",
)


def authorization_refusal(text: str) -> str | None:
    """Which authorization refusal an error's text reports, if any."""
    return next((name for name in AUTHORIZATION_REFUSALS if name in text), None)


GROUP_ACTIVE = (
    "UNKNOWN_MEMBER_ID",
    "ILLEGAL_GENERATION",
    "REBALANCE_IN_PROGRESS",
    "FENCED_INSTANCE_ID",
    "STALE_MEMBER_EPOCH",
)
BAD_INPUT = ("_INVALID_ARG", "INVALID_GROUP_ID", "INVALID_PARTITIONS", "OFFSET_OUT_OF_RANGE")
# Answers to a transactional call (send offsets, commit) or a committed-offsets read that are
# worth another try within the caller's budget, even when librdkafka does not flag them
# retriable: a group coordinator that moves or is still loading (the first group on a fresh
# cluster creates __consumer_offsets), a pending transactional offset commit.
TRANSACTION_RETRY = (
    "REQUEST_TIMED_OUT",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR",
    "CONCURRENT_TRANSACTIONS",
    "UNSTABLE_OFFSET_COMMIT",
    "_TIMED_OUT",
    "_WAIT_COORD",
    "_TRANSPORT",
)
# A transactional producer that another producer with its transactional.id took over, or
# whose id or epoch the coordinator no longer knows (expired, bumped by a newer producer).
# librdkafka makes most of these fatal to the producer, but a new producer with the same
# transactional.id gets past them: its init_transactions() fences the other one in turn.
FENCED = (
    "_FENCED",
    "PRODUCER_FENCED",
    "INVALID_PRODUCER_EPOCH",
    "INVALID_PRODUCER_ID_MAPPING",
    "UNKNOWN_PRODUCER_ID",
)


def is_authentication_error(error: KafkaError) -> bool:
    """A login or TLS handshake the broker (or its token endpoint) refused: no retry gets past
    it. librdkafka gives `_AUTHENTICATION` also to a handshake cut short by a broker going
    down ("SaslAuthenticateRequest failed: Local: Broker transport failure") and to a token
    endpoint that does not answer: those are outages, retried as such."""
    return refusal_kind(error.code(), error.str()) is not None


# A TLS alert the broker sent: it refused the client's certificate (42 bad certificate, 45
# certificate expired, 46 certificate unknown, 48 unknown CA, 116 certificate required).
_TLS_ALERT = re.compile(
    r"alert (?:number )?(?:42|45|46|48|116)\b|alert (?:bad|unknown|certificate)"
)
_TOKEN_REFUSED = re.compile(r"\b(?:40[013])\b|invalid_client|invalid_grant|unauthorized", re.I)


def refusal_kind(code: int, text: str) -> str | None:
    """Which refusal a librdkafka error is: `sasl`, `oauth` (the token endpoint refused the
    client), `tls-server` (the broker's certificate is not trusted), `tls-client` (the broker
    refused the client's certificate), `tls-listener` (the port does not speak TLS); None for
    anything else, outages included."""
    lowered = text.lower()
    if code in codes("_SSL") and "handshake failed" in lowered:
        if "plaintext broker listener" in lowered:
            return "tls-listener"
        return "tls-server" if "verify" in lowered else "tls-client"
    if code in codes("_TRANSPORT") and "ssl routines" in lowered and _TLS_ALERT.search(lowered):
        return "tls-client"
    if code not in codes(*AUTHENTICATION):
        return None
    if "oauthbearer token" in lowered or "oidc token" in lowered:
        return "oauth" if _TOKEN_REFUSED.search(text) else None
    if any(word in lowered for word in ("transport", "timed out", "disconnected")):
        return None
    return "sasl"


# librdkafka's text: "sasl_plaintext://host:port/bootstrap: SASL authentication error: ..."
_BROKER_PREFIX = re.compile(r"^(?:[a-z_]+://)?(?P<address>[^\s/]+)(?:/[^\s:]*)?:\s*")


def authentication_failed(
    config: Mapping[str, Any], text: str, *, broker: str | None = None, code: int | None = None
) -> KafkaAuthenticationError:
    """The error for a login or TLS handshake that was refused, naming the mechanism, the
    broker and what to check in the connection (never a secret): `text` is librdkafka's."""
    match = _BROKER_PREFIX.match(text)
    reason = text[match.end() :] if match else text
    where = broker or (match.group("address") if match else str(config.get(BOOTSTRAP_SERVERS)))
    reason = redact(reason, secret_values(config))
    kind = refusal_kind(code, text) if code is not None else None
    mechanism = describe(config)
    if kind == "tls-server":
        return KafkaAuthenticationError(
            f"TLS handshake with broker {where} failed ({mechanism}): the broker's certificate "
            f"is not trusted: {reason}; check the connection's ssl.ca.pem (the broker's CA)"
        )
    if kind == "tls-listener":
        return KafkaAuthenticationError(
            f"TLS handshake with broker {where} failed ({mechanism}): that port does not speak "
            f"TLS: {reason}; check the connection's security.protocol and bootstrap.servers"
        )
    if kind == "tls-client":
        return KafkaAuthenticationError(
            f"TLS handshake with broker {where} failed ({mechanism}): the broker refused the "
            f"client certificate (expired, missing or not signed by a CA it trusts): {reason}; "
            f"check the connection's ssl.certificate.pem and ssl.key.pem"
        )
    if kind == "oauth":
        client = config.get("sasl.oauthbearer.client.id")
        endpoint = config.get("sasl.oauthbearer.token.endpoint.url")
        return KafkaAuthenticationError(
            f"OAUTHBEARER login to broker {where} failed ({mechanism}): the token endpoint "
            f"{endpoint} refused client {client!r}: {reason}; check the connection's "
            f"sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret"
        )
    user = config.get("sasl.username")
    who = f"user {user!r}" if user else "a client without sasl.username"
    named = config.get("sasl.mechanisms") or config.get("sasl.mechanism") or "GSSAPI"
    return KafkaAuthenticationError(
        f"SASL authentication failed for {who} on broker {where} (mechanism {named}): "
        f"{reason}; check the connection's sasl.username, sasl.password and sasl.mechanisms"
    )


def retry_worthy(error: KafkaError | None) -> bool:
    """True for an error that another try of the same call may get past: never a fatal one
    (fenced, ...) nor one that requires the transaction to be aborted."""
    if error is None or error.fatal() or error.txn_requires_abort():
        return False
    return bool(error.retriable()) or error.code() in codes(*TRANSACTION_RETRY)


def fenced_or_retriable(error: KafkaError | None) -> bool:
    """True if a transactional producer's `error` is one that a new producer with the same
    transactional.id, or a new try, may get past: the producer was fenced or its id expired,
    or the error is retriable. False for the rest (a refused authorization, a bad setting, an
    abortable error of the data itself, ...), which another try would meet again."""
    if error is None:
        return False
    if error.code() in codes(*FENCED):
        return True
    return not error.fatal() and (
        bool(error.retriable()) or error.code() in codes(*TRANSACTION_RETRY)
    )
