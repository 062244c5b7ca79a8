"""Reconcile a checkpoint's Kafka offsets against the partitions and watermarks Kafka has now.

Run before (re)starting a query from a checkpoint or a savepoint: it says what Spark would do
with those offsets (resume, lose records, fail on data loss, silently skip new partitions) and
how far behind the query will start, so an operator can block or warn before submitting.

Pure logic: the caller gathers the Kafka view (admin client) and the checkpoint offsets.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from airflow_provider_kafkaspark.core.kafka.offsets import TopicPartition, Watermarks
from airflow_provider_kafkaspark.errors import InvalidInputError

# Figures stay JSON scalars so a plan can travel through XCom as small JSON.
FigureValue = int | float | str | bool | None
Figures = dict[str, FigureValue]
_T = TypeVar("_T")


class Severity(enum.IntEnum):
    """INFO < WARNING < CRITICAL; serialized by name."""

    INFO = 10
    WARNING = 20
    CRITICAL = 30


class FindingKind(enum.Enum):
    NEW_PARTITION = "NEW_PARTITION"
    TOPIC_MISSING = "TOPIC_MISSING"
    PARTITION_MISSING = "PARTITION_MISSING"
    OFFSET_BELOW_EARLIEST = "OFFSET_BELOW_EARLIEST"
    OFFSET_ABOVE_LATEST = "OFFSET_ABOVE_LATEST"
    LAG = "LAG"


# Last sort key, so findings of one topic-level place never depend on input order.
_KIND_ORDER = {kind: i for i, kind in enumerate(FindingKind)}


@dataclass(frozen=True)
class ReconcilePolicy:
    """Thresholds and severities. `None` disables a lag threshold."""

    # Per partition; strictly above triggers a LAG warning.
    lag_records_warning: int | None = 1_000_000
    lag_seconds_warning: float | None = 3600.0
    # WARNING by default: with `assign` a new partition is never read at all.
    new_partition_severity: Severity = Severity.WARNING
    # A subscribed topic that never existed loses nothing yet, unlike a checkpoint topic.
    missing_subscribed_topic_severity: Severity = Severity.WARNING
    # Mirrors Spark's option: with failOnDataLoss=false a retention gap is survivable.
    fail_on_data_loss: bool = True
    # Above this many partition findings of one kind in one topic, they fold into one
    # topic-level finding so a 1,000-partition topic past retention stays small JSON.
    max_findings_per_topic: int = 10
    # Lag entries kept in the plan's summary (worst first); the rest are only counted.
    max_lag_entries: int = 100

    def __post_init__(self) -> None:
        if self.max_findings_per_topic < 1:
            raise InvalidInputError(
                f"ReconcilePolicy.max_findings_per_topic must be >= 1, "
                f"got {self.max_findings_per_topic}"
            )
        if self.max_lag_entries < 0:
            raise InvalidInputError(
                f"ReconcilePolicy.max_lag_entries must be >= 0, got {self.max_lag_entries}"
            )


@dataclass(frozen=True, kw_only=True)
class KafkaView:
    """What Kafka has now, for the topics the job reads.

    `partitions` holds every topic that exists in Kafka (absent key = topic does not exist);
    `subscribed` the topics the job is configured to read, existing or not;
    `first_unread_timestamps_ms` the timestamp of the record at the checkpoint offset (for a
    partition the checkpoint never read: of its earliest record), when known.
    """

    partitions: Mapping[str, Mapping[int, Watermarks]]
    observed_at_ms: int
    subscribed: frozenset[str] = frozenset()
    first_unread_timestamps_ms: Mapping[TopicPartition, int | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    severity: Severity
    topic: str
    # None: about the whole topic, or folded over several partitions (see figures).
    partition: int | None
    figures: Figures
    message: str
    action: str

    @property
    def where(self) -> str:
        return self.topic if self.partition is None else f"{self.topic}-{self.partition}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "severity": self.severity.name,
            "topic": self.topic,
            "partition": self.partition,
            "figures": dict(self.figures),
            "message": self.message,
            "action": self.action,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        def parse() -> Finding:
            partition = data["partition"]
            return cls(
                kind=FindingKind(data["kind"]),
                severity=Severity[data["severity"]],
                topic=str(data["topic"]),
                partition=None if partition is None else int(partition),
                figures=_figures(data["figures"]),
                message=str(data["message"]),
                action=str(data["action"]),
            )

        return _parsing("finding", parse)


@dataclass(frozen=True)
class PartitionLag:
    """Where a partition's reading starts and how much is waiting there.

    `offset` is the checkpoint's offset, or None for a partition the checkpoint never read
    (counted from the earliest offset, where `subscribe` starts it). Below the earliest
    offset, only the records Kafka still has are counted; above the end offset, none.
    """

    topic: str
    partition: int
    offset: int | None
    low: int
    high: int
    lag_records: int
    # None when records wait but the first one's timestamp is unknown.
    lag_seconds: float | None

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "low": self.low,
            "high": self.high,
            "lag_records": self.lag_records,
            "lag_seconds": self.lag_seconds,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PartitionLag:
        def parse() -> PartitionLag:
            offset, seconds = data["offset"], data["lag_seconds"]
            return cls(
                topic=str(data["topic"]),
                partition=int(data["partition"]),
                offset=None if offset is None else int(offset),
                low=int(data["low"]),
                high=int(data["high"]),
                lag_records=int(data["lag_records"]),
                lag_seconds=None if seconds is None else float(seconds),
            )

        return _parsing("lag entry", parse)


@dataclass(frozen=True)
class ReconcilePlan:
    """Findings (most severe first) and lag figures.

    `lag` is the full per-partition table; it is not serialized (a 1,000-partition job
    would not be small JSON) and is left out of equality. `top_lag` keeps the worst
    `max_lag_entries` partitions with lag > 0, and is what `to_dict` carries; a plan
    read back with `from_dict` has `lag` rebuilt from `top_lag` only. Lag totals include
    partitions the checkpoint never read (from their earliest offset); `max_lag_seconds`
    covers only partitions whose first unread timestamp is known (None if none is).
    """

    findings: tuple[Finding, ...]
    observed_at_ms: int
    # No checkpoint offsets at all: the start is up to `startingOffsets`, not the checkpoint.
    fresh_start: bool
    partitions_checked: int
    lagging_partitions: int
    total_lag_records: int
    max_lag_seconds: float | None
    records_lost_total: int
    top_lag: tuple[PartitionLag, ...]
    lag: dict[TopicPartition, PartitionLag] = field(default_factory=dict, compare=False, repr=False)

    @property
    def max_severity(self) -> Severity | None:
        """None when there are no findings."""
        return max((f.severity for f in self.findings), default=None)

    @property
    def lag_truncated(self) -> int:
        return self.lagging_partitions - len(self.top_lag)

    def blocking(self, min_severity: Severity = Severity.CRITICAL) -> bool:
        return any(f.severity >= min_severity for f in self.findings)

    def summary(self) -> str:
        worst = self.max_severity
        head = f"reconcile {'OK' if worst is None else worst.name}"
        if self.fresh_start:
            head += " (fresh start: no checkpoint offsets)"
        seconds = "unknown" if self.max_lag_seconds is None else f"{self.max_lag_seconds:,.1f} s"
        text = (
            f"{head}: {_count(self.partitions_checked, 'partition')}, "
            f"lag {self.total_lag_records:,} records in "
            f"{_count(self.lagging_partitions, 'partition')} "
            f"(max {seconds}), {self.records_lost_total:,} records lost"
        )
        if not self.findings:
            return text + ", no findings"
        counts = ", ".join(
            f"{n} {sev.name.lower()}"
            for sev in sorted(Severity, reverse=True)
            if (n := sum(1 for f in self.findings if f.severity is sev))
        )
        first = self.findings[0]
        return (
            f"{text}, {len(self.findings)} findings ({counts}); "
            f"first: {first.kind.value} {first.where}: {first.message}"
        )

    def to_dict(self) -> dict[str, Any]:
        worst = self.max_severity
        return {
            "observed_at_ms": self.observed_at_ms,
            "fresh_start": self.fresh_start,
            "max_severity": None if worst is None else worst.name,
            "records_lost_total": self.records_lost_total,
            "findings": [f.to_dict() for f in self.findings],
            "lag": {
                "partitions": self.partitions_checked,
                "lagging_partitions": self.lagging_partitions,
                "total_records": self.total_lag_records,
                "max_seconds": self.max_lag_seconds,
                "top": [entry.to_dict() for entry in self.top_lag],
                "truncated": self.lag_truncated,
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReconcilePlan:
        def parse() -> ReconcilePlan:
            lag = data["lag"]
            top = tuple(PartitionLag.from_dict(entry) for entry in lag["top"])
            seconds = lag["max_seconds"]
            return cls(
                findings=tuple(Finding.from_dict(f) for f in data["findings"]),
                observed_at_ms=int(data["observed_at_ms"]),
                fresh_start=bool(data["fresh_start"]),
                partitions_checked=int(lag["partitions"]),
                lagging_partitions=int(lag["lagging_partitions"]),
                total_lag_records=int(lag["total_records"]),
                max_lag_seconds=None if seconds is None else float(seconds),
                records_lost_total=int(data["records_lost_total"]),
                top_lag=top,
                lag={entry.tp: entry for entry in top},
            )

        return _parsing("reconcile plan", parse)


def build_reconcile_plan(
    checkpoint: Mapping[str, Mapping[int, int]],
    kafka: KafkaView,
    policy: ReconcilePolicy | None = None,
) -> ReconcilePlan:
    """Compare `checkpoint` (offsets of the last committed batch) with `kafka`.

    Linear in the number of partitions, apart from sorting the findings.
    """
    policy = policy or ReconcilePolicy()
    fresh_start = not checkpoint
    findings: list[Finding] = []
    lag: dict[TopicPartition, PartitionLag] = {}
    records_lost_total = 0

    for topic in sorted(set(checkpoint) | kafka.subscribed | set(kafka.partitions)):
        in_kafka = kafka.partitions.get(topic)
        read = checkpoint.get(topic)
        if in_kafka is None:
            findings.append(_topic_missing(topic, read, policy))
            continue
        found: list[Finding] = []
        add = found.append
        for partition, offset in (read or {}).items():
            marks = in_kafka.get(partition)
            if marks is None:
                add(_partition_missing(topic, partition, offset, len(in_kafka)))
                continue
            tp = TopicPartition(topic, partition)
            if offset < marks.low:
                records_lost_total += marks.low - offset
                add(_below_earliest(topic, partition, offset, marks, policy))
                waiting = marks.size
            elif offset > marks.high:
                add(_above_latest(topic, partition, offset, marks))
                waiting = 0
            else:
                waiting = marks.high - offset
            entry = _lag_entry(tp, offset, marks, waiting, kafka)
            lag[tp] = entry
            if marks.low <= offset <= marks.high and _over_threshold(entry, policy):
                add(_lag_finding(entry))

        # On a fresh start every partition is "new"; that says nothing about the checkpoint.
        if not fresh_start:
            known = read or {}
            for partition, marks in in_kafka.items():
                if partition in known:
                    continue
                tp = TopicPartition(topic, partition)
                lag[tp] = _lag_entry(tp, None, marks, marks.size, kafka)
                add(_new_partition(topic, partition, marks, policy))

        per_kind: dict[FindingKind, list[Finding]] = {}
        for finding in found:
            per_kind.setdefault(finding.kind, []).append(finding)
        for kind, group in per_kind.items():
            if len(group) > policy.max_findings_per_topic:
                findings.append(_fold(kind, topic, group))
            else:
                findings.extend(group)

    findings.sort(key=_finding_order)
    entries = lag.values()
    lagging = [e for e in entries if e.lag_records > 0]
    top = heapq.nsmallest(
        policy.max_lag_entries, lagging, key=lambda e: (-e.lag_records, e.topic, e.partition)
    )
    known_seconds = [e.lag_seconds for e in entries if e.lag_seconds is not None]
    return ReconcilePlan(
        findings=tuple(findings),
        observed_at_ms=kafka.observed_at_ms,
        fresh_start=fresh_start,
        partitions_checked=len(lag),
        lagging_partitions=len(lagging),
        total_lag_records=sum(e.lag_records for e in lagging),
        max_lag_seconds=max(known_seconds, default=None),
        records_lost_total=records_lost_total,
        top_lag=tuple(top),
        lag=lag,
    )


def _finding_order(f: Finding) -> tuple[int, str, bool, int, int]:
    # Topic-level findings before that topic's partitions: they usually explain them.
    return (
        -f.severity,
        f.topic,
        f.partition is not None,
        -1 if f.partition is None else f.partition,
        _KIND_ORDER[f.kind],
    )


def _lag_entry(
    tp: TopicPartition, offset: int | None, marks: Watermarks, waiting: int, kafka: KafkaView
) -> PartitionLag:
    seconds: float | None
    if waiting == 0:
        seconds = 0.0
    else:
        ts = kafka.first_unread_timestamps_ms.get(tp)
        # Clock skew between producers and this host must not show as negative lag.
        seconds = None if ts is None else max(0, kafka.observed_at_ms - ts) / 1000
    return PartitionLag(tp.topic, tp.partition, offset, marks.low, marks.high, waiting, seconds)


def _over_threshold(entry: PartitionLag, policy: ReconcilePolicy) -> bool:
    records = policy.lag_records_warning
    seconds = policy.lag_seconds_warning
    return (records is not None and entry.lag_records > records) or (
        seconds is not None and entry.lag_seconds is not None and entry.lag_seconds > seconds
    )


def _topic_missing(topic: str, read: Mapping[int, int] | None, policy: ReconcilePolicy) -> Finding:
    if read is not None:
        return Finding(
            FindingKind.TOPIC_MISSING,
            Severity.CRITICAL,
            topic,
            None,
            {"checkpoint_partitions": len(read)},
            f"topic {topic!r} is in the checkpoint ({_count(len(read), 'partition')}) "
            "but not in Kafka",
            "Recreate the topic, or reset the job's offsets without it: Spark cannot resume "
            "from offsets of a deleted topic (failOnDataLoss=true fails the query).",
        )
    return Finding(
        FindingKind.TOPIC_MISSING,
        policy.missing_subscribed_topic_severity,
        topic,
        None,
        {"checkpoint_partitions": 0},
        f"topic {topic!r} is subscribed but does not exist in Kafka",
        "Create the topic or drop it from the job's topics: `subscribe` reads nothing from it "
        "until it exists, `assign` fails.",
    )


def _partition_missing(topic: str, partition: int, offset: int, kafka_partitions: int) -> Finding:
    figures: Figures = {"checkpoint_offset": offset, "kafka_partitions": kafka_partitions}
    return _partition_finding(
        FindingKind.PARTITION_MISSING, Severity.CRITICAL, topic, partition, figures
    )


def _below_earliest(
    topic: str, partition: int, offset: int, marks: Watermarks, policy: ReconcilePolicy
) -> Finding:
    figures: Figures = {
        "checkpoint_offset": offset,
        "low": marks.low,
        "high": marks.high,
        "records_lost": marks.low - offset,
    }
    severity = Severity.CRITICAL if policy.fail_on_data_loss else Severity.WARNING
    return _partition_finding(
        FindingKind.OFFSET_BELOW_EARLIEST, severity, topic, partition, figures
    )


def _above_latest(topic: str, partition: int, offset: int, marks: Watermarks) -> Finding:
    figures: Figures = {
        "checkpoint_offset": offset,
        "low": marks.low,
        "high": marks.high,
        "offsets_ahead": offset - marks.high,
    }
    return _partition_finding(
        FindingKind.OFFSET_ABOVE_LATEST, Severity.CRITICAL, topic, partition, figures
    )


def _new_partition(
    topic: str, partition: int, marks: Watermarks, policy: ReconcilePolicy
) -> Finding:
    figures: Figures = {"low": marks.low, "high": marks.high, "records_waiting": marks.size}
    return _partition_finding(
        FindingKind.NEW_PARTITION, policy.new_partition_severity, topic, partition, figures
    )


def _lag_finding(entry: PartitionLag) -> Finding:
    figures: Figures = {
        "checkpoint_offset": entry.offset,
        "high": entry.high,
        "lag_records": entry.lag_records,
        "lag_seconds": entry.lag_seconds,
    }
    return _partition_finding(
        FindingKind.LAG, Severity.WARNING, entry.topic, entry.partition, figures
    )


def _partition_finding(
    kind: FindingKind, severity: Severity, topic: str, partition: int | None, figures: Figures
) -> Finding:
    where = f"partition {partition}" if partition is not None else _folded_where(figures)
    message, action = _WORDS[kind](topic, where, figures)
    return Finding(kind, severity, topic, partition, figures, message, action)


def _folded_where(figures: Figures) -> str:
    return f"{figures['partitions']} partitions ({figures['partition_ranges']})"


# Figures that add up across partitions; the others are per-partition positions.
_SUMMED = ("records_waiting", "records_lost", "offsets_ahead", "lag_records")


def _fold(kind: FindingKind, topic: str, group: list[Finding]) -> Finding:
    partitions = sorted(f.partition for f in group if f.partition is not None)
    figures: Figures = {"partitions": len(partitions), "partition_ranges": _ranges(partitions)}
    for key in _SUMMED:
        if key in group[0].figures:
            figures[key] = sum(_int(f.figures[key]) for f in group)
    if "kafka_partitions" in group[0].figures:
        figures["kafka_partitions"] = group[0].figures["kafka_partitions"]
    if "lag_seconds" in group[0].figures:
        seconds = [s for f in group if isinstance(s := f.figures["lag_seconds"], float)]
        figures["max_lag_seconds"] = max(seconds, default=None)
    severity = max(f.severity for f in group)
    return _partition_finding(kind, severity, topic, None, figures)


def _ranges(partitions: Iterable[int]) -> str:
    """`[0, 1, 2, 5]` -> `"0-2,5"`: keeps a folded finding's list of partitions short."""
    spans: list[list[int]] = []
    for p in partitions:
        if spans and p == spans[-1][1] + 1:
            spans[-1][1] = p
        else:
            spans.append([p, p])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _int(value: FigureValue) -> int:
    return value if isinstance(value, int) else 0


def _n(figures: Figures, key: str) -> str:
    value = figures.get(key)
    return f"{value:,}" if isinstance(value, int) else "?"


def _words_new(topic: str, where: str, figures: Figures) -> tuple[str, str]:
    return (
        f"{where} of topic {topic!r} never read by the checkpoint; "
        f"{_n(figures, 'records_waiting')} records waiting",
        "Restart with `subscribe` (it reads partitions unknown to the checkpoint from the "
        "earliest offset) or add them to `assign`; a source that only knows the checkpoint's "
        "partitions never reads them.",
    )


def _words_partition_missing(topic: str, where: str, figures: Figures) -> tuple[str, str]:
    return (
        f"{where} of topic {topic!r} in the checkpoint but Kafka has only "
        f"{_n(figures, 'kafka_partitions')} partitions: the topic was deleted and recreated",
        f"Do not restore this checkpoint's offsets for {topic!r}; reset them explicitly "
        "(earliest, latest or by timestamp).",
    )


def _words_below(topic: str, where: str, figures: Figures) -> tuple[str, str]:
    position = (
        f" at offset {_n(figures, 'checkpoint_offset')}, earliest is {_n(figures, 'low')}"
        if "checkpoint_offset" in figures
        else ""
    )
    return (
        f"{where} of topic {topic!r}{position}: {_n(figures, 'records_lost')} records "
        "lost to retention",
        "Accept the loss and resume from the earliest offsets (failOnDataLoss=false or an "
        "explicit reset), or replay the lost range from elsewhere; with failOnDataLoss=true "
        "Spark fails the query.",
    )


def _words_above(topic: str, where: str, figures: Figures) -> tuple[str, str]:
    position = (
        f" at offset {_n(figures, 'checkpoint_offset')}, end is {_n(figures, 'high')}"
        if "checkpoint_offset" in figures
        else ""
    )
    return (
        f"{where} of topic {topic!r}{position}: checkpoint is "
        f"{_n(figures, 'offsets_ahead')} offsets past the end; topic recreated or truncated",
        "Do not restore this checkpoint's offsets; reset them explicitly "
        "(earliest, latest or by timestamp).",
    )


def _words_lag(topic: str, where: str, figures: Figures) -> tuple[str, str]:
    seconds = figures.get("lag_seconds", figures.get("max_lag_seconds"))
    behind = f", {seconds:,.0f} s behind" if isinstance(seconds, float) else ""
    return (
        f"{where} of topic {topic!r}: {_n(figures, 'lag_records')} records waiting{behind}",
        "Expect a long catch-up, or raise the job's throughput (executors, maxOffsetsPerTrigger).",
    )


# TOPIC_MISSING has no entry: it is never per partition, so never built or folded here.
_WORDS: dict[FindingKind, Callable[[str, str, Figures], tuple[str, str]]] = {
    FindingKind.NEW_PARTITION: _words_new,
    FindingKind.PARTITION_MISSING: _words_partition_missing,
    FindingKind.OFFSET_BELOW_EARLIEST: _words_below,
    FindingKind.OFFSET_ABOVE_LATEST: _words_above,
    FindingKind.LAG: _words_lag,
}


def _figures(raw: object) -> Figures:
    if not isinstance(raw, Mapping):
        raise TypeError(f"figures is {type(raw).__name__}, not an object")
    result: Figures = {}
    for key, value in raw.items():
        if value is not None and not isinstance(value, int | float | str | bool):
            raise TypeError(f"figure {key!r} is {type(value).__name__}")
        result[str(key)] = value
    return result


def _parsing(what: str, parse: Callable[[], _T]) -> _T:
    try:
        return parse()
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what}: malformed ({type(exc).__name__}: {exc})") from exc
