"""Every Kafka ACL a job needs, from its spec: the one list that `kafkaspark job acls` prints,
docs/kafka-acls.md explains, and tests/integration/test_job_acls.py grants (and nothing else)
to a principal that then runs the job against a broker whose authorizer is on.

What uses what (the operations Kafka checks; Read and Write imply Describe):

- the source topics, Read: Spark's source lists their partitions and offsets (driver) and
  fetches their records (executors); the driver's topic check and lag commits, and the Airflow
  tasks' health, reconcile and backfill calls read their offsets, the health sensor the
  timestamp of the first unread record; a lag commit (OffsetCommit) needs Read on each topic;
- the lag group (`kafkaspark.<job_name>`, or `lag_group`), Read: the driver's lag commits;
- with the `kafka_exactly_once` sink, on the sink's cluster: the sink topic, Write (the rows)
  and Read (each task's marker is a transactional offset commit of the sink topic's partition
  0, which Kafka authorizes with Read on that topic); the transactional ids `<sink_id>-<slot>`,
  Write, as a prefix; the marker groups `<sink_id>.<query id>.p<slot>`, Read, as a prefix
  (the query id is in the checkpoint, not in the spec);
- with Spark's `kafka` sink: the sink topic, Write (its producer is idempotent; since Kafka
  2.8 Write on a topic stands in for the cluster's IdempotentWrite);
- with `spark.sql.streaming.kafka.useDeprecatedOffsetFetching=true`, Spark's driver reads
  offsets with a consumer of a group (Spark's docs ask Group Read for it): Read on
  `kafka.group.id`, else on the `groupIdPrefix` (default `spark-kafka-source`) as a prefix.
  By default (the admin-client offset reader, Spark's default since 3.4) no Spark client
  uses a group.

The consumer that reads record timestamps for the Airflow tasks has a `group.id`
(`kafkaspark-admin`) but only assigns partitions and never commits: no group ACL (the real
broker's test runs it without one).

Pure: no client is made here; `JobAcl.command` gives the `kafka-acls.sh` line of one ACL.
The spec is read through the attributes `JobAclSpec` names (a `JobSpec` has them), since core's
kafka layer stands below its spec layer.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

from airflow_provider_kafkaspark.errors import InvalidInputError

TOPIC = "TOPIC"
GROUP = "GROUP"
TRANSACTIONAL_ID = "TRANSACTIONAL_ID"
LITERAL = "LITERAL"
PREFIXED = "PREFIXED"
READ = "READ"
WRITE = "WRITE"
DESCRIBE = "DESCRIBE"

DRIVER = "driver"
EXECUTORS = "executors"
AIRFLOW = "Airflow tasks"

# Spark's own group id prefix when the source's options set none (KafkaSourceProvider).
SPARK_GROUP_PREFIX = "spark-kafka-source"
DEPRECATED_OFFSET_FETCHING = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"

# The exactly-once sink's names (`spark/sink/config.py`: `transactional_id`, `marker_group`)
# are `<sink_id>-<slot>` and `<sink_id>.<query id>.p<slot>`: these are what they start with.
TRANSACTIONAL_ID_SEPARATOR = "-"
MARKER_GROUP_SEPARATOR = "."

_KAFKA_ACLS_FLAGS = {TOPIC: "--topic", GROUP: "--group", TRANSACTIONAL_ID: "--transactional-id"}


class _Source(Protocol):
    @property
    def bootstrap_servers(self) -> str: ...
    @property
    def subscribe(self) -> tuple[str, ...]: ...
    @property
    def subscribe_pattern(self) -> str | None: ...
    @property
    def assign(self) -> Mapping[str, Sequence[int]]: ...
    @property
    def options(self) -> Mapping[str, str]: ...


class _Sink(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def topic(self) -> str | None: ...
    @property
    def sink_id(self) -> str | None: ...


class JobAclSpec(Protocol):
    """What `job_acls` reads of a job spec (`core.spec.jobspec.JobSpec`)."""

    @property
    def job_name(self) -> str: ...
    @property
    def source(self) -> _Source: ...
    @property
    def sink(self) -> _Sink: ...
    @property
    def spark_conf(self) -> Mapping[str, str]: ...
    @property
    def effective_lag_group(self) -> str | None: ...
    @property
    def sink_bootstrap_servers(self) -> str: ...


@dataclass(frozen=True)
class JobAcl:
    """One ALLOW ACL: `operation` on the resource (`resource_type`, `pattern_type`, `name`)
    of the cluster at `cluster` (bootstrap servers), and who in the job uses it, and why."""

    resource_type: str
    pattern_type: str
    name: str
    operation: str
    cluster: str
    who: str
    why: str

    @property
    def resource(self) -> str:
        """`TOPIC orders`, `TRANSACTIONAL_ID orders-* (prefixed)`."""
        star = "*" if self.pattern_type == PREFIXED else ""
        kind = " (prefixed)" if self.pattern_type == PREFIXED else ""
        return f"{self.resource_type} {self.name}{star}{kind}"

    def command(self, principal: str, *, command_config: str | None = None) -> str:
        """The `kafka-acls.sh` line that grants this ACL to `principal` (`User:name`)."""
        words = ["kafka-acls.sh", "--bootstrap-server", self.cluster.split(",")[0]]
        if command_config:
            words += ["--command-config", command_config]
        words += [
            "--add",
            "--allow-principal",
            principal,
            "--operation",
            self.operation.capitalize(),
            _KAFKA_ACLS_FLAGS[self.resource_type],
            self.name,
            "--resource-pattern-type",
            self.pattern_type.lower(),
        ]
        return shlex.join(words)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def job_acls(spec: JobAclSpec) -> list[JobAcl]:
    """Every ACL the job's driver and executors, and the provider's Airflow tasks for it, need
    (the module's docstring says which uses which). Raises InvalidInputError for a
    `subscribe_pattern` that starts with no literal text: Kafka ACLs know no regular
    expressions, only names and prefixes."""
    source_cluster = spec.source.bootstrap_servers
    sink_cluster = spec.sink_bootstrap_servers
    found: list[JobAcl] = []

    source_why = (
        "Spark's source lists its partitions and offsets and fetches its records; the "
        "driver's topic check and lag commits (OffsetCommit needs Read on the topic), and "
        "the health, reconcile and backfill tasks, read its offsets and record timestamps"
    )
    for topic in sorted({*spec.source.subscribe, *spec.source.assign}):
        found.append(
            JobAcl(
                TOPIC,
                LITERAL,
                topic,
                READ,
                source_cluster,
                _who(DRIVER, EXECUTORS, AIRFLOW),
                source_why,
            )
        )
    if spec.source.subscribe_pattern:
        prefix = pattern_prefix(spec.source.subscribe_pattern)
        found.append(
            JobAcl(
                TOPIC,
                PREFIXED,
                prefix,
                READ,
                source_cluster,
                _who(DRIVER, EXECUTORS, AIRFLOW),
                f"the topics `{spec.source.subscribe_pattern}` matches (an ACL has no regular "
                f"expression: its literal start): {source_why}",
            )
        )
    found.extend(_spark_group(spec))
    lag_group = spec.effective_lag_group
    if lag_group:
        found.append(
            JobAcl(
                GROUP,
                LITERAL,
                lag_group,
                READ,
                source_cluster,
                DRIVER,
                "lag commits: each batch's end offsets, committed (OffsetCommit) so that "
                "`kafka-consumer-groups` shows the job's position and lag",
            )
        )
    found.extend(_sink_acls(spec, sink_cluster))
    return _merged(found)


def _sink_acls(spec: JobAclSpec, cluster: str) -> list[JobAcl]:
    sink = spec.sink
    if not sink.kind.startswith("kafka") or not sink.topic:
        return []
    if sink.kind == "kafka":
        return [
            JobAcl(
                TOPIC,
                LITERAL,
                sink.topic,
                WRITE,
                cluster,
                EXECUTORS,
                "Spark's Kafka sink writes the rows (an idempotent producer: Write on a topic "
                "stands in for the cluster's IdempotentWrite, Kafka 2.8 on); the Describe it "
                "implies serves the submit's and the driver's topic check",
            )
        ]
    sink_id = sink.sink_id or spec.job_name
    return [
        JobAcl(
            TOPIC,
            LITERAL,
            sink.topic,
            WRITE,
            cluster,
            EXECUTORS,
            "the exactly-once sink's transactional producers write the rows; the Describe "
            "it implies serves the submit's and the driver's topic check",
        ),
        JobAcl(
            TOPIC,
            LITERAL,
            sink.topic,
            READ,
            cluster,
            EXECUTORS,
            f"each task's marker is a transactional offset commit (TxnOffsetCommit) of "
            f"{sink.topic}-0, which Kafka authorizes with Read on the topic",
        ),
        JobAcl(
            TRANSACTIONAL_ID,
            PREFIXED,
            f"{sink_id}{TRANSACTIONAL_ID_SEPARATOR}",
            WRITE,
            cluster,
            EXECUTORS,
            f"the producers' transactional.id `{sink_id}-<slot>`, one per output task slot",
        ),
        JobAcl(
            GROUP,
            PREFIXED,
            f"{sink_id}{MARKER_GROUP_SEPARATOR}",
            READ,
            cluster,
            EXECUTORS,
            f"the marker groups `{sink_id}.<query id>.p<slot>`: read (OffsetFetch) before a "
            f"task writes, committed in its transaction; the query id is the checkpoint's",
        ),
    ]


def _spark_group(spec: JobAclSpec) -> list[JobAcl]:
    """The group of Spark's driver consumer with the deprecated offset reader; none by
    default (the admin-client reader; the executors' consumers only assign)."""
    deprecated = str(spec.spark_conf.get(DEPRECATED_OFFSET_FETCHING, "false")).lower() == "true"
    if not deprecated:
        return []
    options = spec.source.options
    why = (
        f"{DEPRECATED_OFFSET_FETCHING}=true: Spark's driver reads offsets with a consumer "
        f"of this group (a subscription joins it)"
    )
    if options.get("kafka.group.id"):
        return [
            JobAcl(
                GROUP,
                LITERAL,
                options["kafka.group.id"],
                READ,
                spec.source.bootstrap_servers,
                DRIVER,
                why,
            )
        ]
    prefix = options.get("groupIdPrefix") or SPARK_GROUP_PREFIX
    return [JobAcl(GROUP, PREFIXED, f"{prefix}-", READ, spec.source.bootstrap_servers, DRIVER, why)]


def _who(*parts: str) -> str:
    return ", ".join(parts)


def _merged(acls: list[JobAcl]) -> list[JobAcl]:
    """One entry per ACL (a topic both read and written by the job, a sink on the source's
    cluster): the users and reasons of the duplicates joined."""
    merged: dict[tuple[str, ...], JobAcl] = {}
    for acl in acls:
        key = (acl.cluster, acl.resource_type, acl.pattern_type, acl.name, acl.operation)
        first = merged.get(key)
        if first is None:
            merged[key] = acl
            continue
        who = dict.fromkeys([*first.who.split(", "), *acl.who.split(", ")])
        merged[key] = replace(first, who=", ".join(who), why=f"{first.why}; {acl.why}")
    return list(merged.values())


_META = set(".^$*+?()[]{}|\\")


def pattern_prefix(pattern: str) -> str:
    """The literal text every topic `pattern` fully matches starts with (Spark matches the
    whole name): `orders\\..*` -> `orders.`. Raises InvalidInputError when there is none."""
    chars: list[str] = []
    i = 1 if pattern.startswith("^") else 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escaped = pattern[i + 1 : i + 2]
            if escaped and not escaped.isalnum():
                chars.append(escaped)
                i += 2
                continue
            break
        if char in _META:
            if char in "?*{" and chars:
                chars.pop()  # the character before may be absent
            break
        chars.append(char)
        i += 1
    if not chars or _top_level_alternation(pattern):
        raise InvalidInputError(
            f"job spec field 'source.subscribe_pattern': {pattern!r} starts with no literal "
            f"text, and Kafka ACLs match names or prefixes only: grant Read on the topics it "
            f"matches yourself"
        )
    return "".join(chars)


def _top_level_alternation(pattern: str) -> bool:
    depth, in_class, i = 0, False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
        i += 1
    return False


def acl_table(acls: Sequence[JobAcl]) -> str:
    """The ACLs as an aligned text table, for a terminal."""
    rows = [("resource", "operation", "cluster", "who", "why")]
    rows += [(a.resource, a.operation, a.cluster, a.who, a.why) for a in acls]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4]
        for row in rows
    )


def check_principal(principal: str) -> str:
    """`principal` if it is a Kafka principal (`User:name`); else InvalidInputError."""
    if not re.fullmatch(r"[A-Za-z]+:\S+", principal):
        raise InvalidInputError(
            f"principal {principal!r} is not a Kafka principal: e.g. User:orders-job"
        )
    return principal
