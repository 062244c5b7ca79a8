"""The job spec: a small, JSON-serializable description of a streaming job.

The Airflow operators write it, the Spark runner reads it, the backfill reuses its source and
transformation. Validation names the field at fault (`source.subscribe`, `sink.topic`, ...).

Client settings that may hold secrets (`kafka_config`, e.g. SASL passwords) travel with the
spec to the driver, never to logs or XCom: `to_dict(redact=True)` masks them.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from airflow_provider_kafkaspark.core.kafka.offsets import parse_kafka_offsets
from airflow_provider_kafkaspark.core.kafka.security import redact
from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.versions import SPARK_LINES, spark_line

T = TypeVar("T")

SINK_KINDS = ("kafka_exactly_once", "kafka", "parquet", "console")
OUTPUT_MODES = ("append", "update", "complete")
_JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_INTERVAL = re.compile(r"^\d+(\.\d+)?\s*(ms|milliseconds?|s|seconds?|m|minutes?)$")
REDACTED = "***"
_SECRET_VARIABLE = re.compile(r"^KAFKASPARK_SECRET_[A-Z0-9_]+$")

# Chosen on purpose (docs/design.md, "Dead bootstrap entries"): the Kafka client defaults,
# 30 s per request and 60 s per API call, let a dead bootstrap entry stall every metadata
# fetch for a minute.
DEFAULT_SOURCE_OPTIONS: dict[str, str] = {
    "kafka.request.timeout.ms": "15000",
    "kafka.default.api.timeout.ms": "30000",
    "kafka.socket.connection.setup.timeout.ms": "5000",
    "kafka.socket.connection.setup.timeout.max.ms": "10000",
}


# The metadata keys of a spec field (`described`), read by `core/spec/schema.py`.
DESCRIPTION = "description"
SCHEMA_KEYWORDS = "json_schema"
ONE_OR_MANY = "one_or_many"


def described(text: str, *, one_or_many: bool = False, **keywords: Any) -> dict[str, Any]:
    """A spec field's metadata, the one place that says what the field means: its description
    and the JSON Schema keywords its type does not say (built from the same patterns and
    choices `validate` checks). `one_or_many`: a single string stands for a list of one.
    `core/spec/schema.py` makes the published JSON Schema from the fields and this."""
    return {DESCRIPTION: text, SCHEMA_KEYWORDS: keywords, ONE_OR_MANY: one_or_many}


class JobSpecError(InvalidInputError):
    """A job spec field is missing or wrong; the message names the field."""


def _fail(path: str, message: str) -> JobSpecError:
    return JobSpecError(f"job spec field '{path}': {message}")


def valid_job_name(name: object) -> bool:
    """Whether `name` is usable as a job name: it becomes part of file and savepoint names,
    so no separators and no leading dot."""
    return isinstance(name, str) and bool(_JOB_NAME.match(name))


def _positive_finite(path: str, value: object) -> float:
    """A number field that must be a finite number (JSON readers accept NaN and Infinity)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail(path, f"must be a finite number, got {_kind(value)}")
    return float(value)


def _kind(value: object) -> str:
    """What a value is, for messages: its type only (values may hold secrets), except for
    the few values that are harmless to show."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return type(value).__name__


_SPARK_SOURCE_OPTIONS = {
    "minPartitions",
    "includeHeaders",
    "groupIdPrefix",
    "maxTriggerDelay",
    "minOffsetsPerTrigger",
    "startingTimestamp",
    "endingTimestamp",
}


@dataclass(frozen=True)
class KafkaSourceSpec:
    """The Kafka source: where the job reads, from which offsets, at what pace. Exactly one
    of `subscribe`, `subscribe_pattern` and `assign` names the topics."""

    bootstrap_servers: str = field(
        metadata=described(
            "The Kafka cluster's bootstrap servers, `host:port` comma separated. A submit "
            "through Airflow replaces it with the `kafka` connection's `bootstrap.servers`.",
            minLength=1,
        )
    )
    subscribe: tuple[str, ...] = field(
        default=(),
        metadata=described(
            "Topics to read (a single topic name may be given as a string).",
            one_or_many=True,
            items={"minLength": 1, "pattern": "^[^,]+$"},
        ),
    )
    subscribe_pattern: str | None = field(
        default=None,
        metadata=described("A regular expression: every topic whose name matches it."),
    )
    assign: dict[str, tuple[int, ...]] = field(
        default_factory=dict,
        metadata=described(
            'Partitions to read, by topic: `{"topic": [0, 1]}`.',
            additionalProperties={"minItems": 1, "items": {"minimum": 0}},
        ),
    )
    starting_offsets: str = field(
        default="earliest",
        metadata=described(
            "Where a job without a checkpoint starts: `earliest`, `latest`, or Spark's "
            'offsets JSON (`{"topic": {"0": 42}}`, -2 earliest, -1 latest).'
        ),
    )
    ending_offsets: str | None = field(
        default=None,
        metadata=described(
            "Batch (backfill) runs only: where they end, `latest` or offsets JSON; a "
            "backfill sets it from the run's data interval."
        ),
    )
    max_offsets_per_trigger: int | None = field(
        default=None,
        metadata=described(
            "At most this many records per micro-batch, across partitions (None: no limit).",
            minimum=1,
        ),
    )
    fail_on_data_loss: bool = field(
        default=True,
        metadata=described(
            "Fail the query when records it has not read are gone (retention, a deleted "
            "topic) rather than skip them."
        ),
    )
    options: dict[str, str] = field(
        default_factory=dict,
        metadata=described(
            "More options of Spark's Kafka source: `kafka.`-prefixed client settings (the "
            "client timeouts default to 15 s per request, 30 s per API call), or the source's "
            "own options named below.",
            propertyNames={
                "anyOf": [{"pattern": "^kafka\\."}, {"enum": sorted(_SPARK_SOURCE_OPTIONS)}]
            },
        ),
    )

    def validate(self) -> None:
        if not self.bootstrap_servers or not isinstance(self.bootstrap_servers, str):
            raise _fail("source.bootstrap_servers", "must name at least one host:port")
        modes = [bool(self.subscribe), bool(self.subscribe_pattern), bool(self.assign)]
        if not isinstance(self.subscribe, tuple | list):
            raise _fail(
                "source.subscribe", f"expected a list of topics, got {_kind(self.subscribe)}"
            )
        if not isinstance(self.assign, dict):
            raise _fail(
                "source.assign",
                f"expected an object of topic -> partitions, got {_kind(self.assign)}",
            )
        if sum(modes) != 1:
            raise _fail(
                "source.subscribe",
                "set exactly one of subscribe, subscribe_pattern or assign",
            )
        for topic in self.subscribe:
            if not isinstance(topic, str) or not topic or "," in topic:
                raise _fail("source.subscribe", f"bad topic {topic!r}")
        for topic, partitions in self.assign.items():
            if (
                not isinstance(partitions, tuple | list)
                or not partitions
                or any(isinstance(p, bool) or not isinstance(p, int) or p < 0 for p in partitions)
            ):
                raise _fail(f"source.assign.{topic}", "needs a list of partition numbers >= 0")
        for name, value in (
            ("starting_offsets", self.starting_offsets),
            ("ending_offsets", self.ending_offsets),
        ):
            if value is None or value in ("earliest", "latest"):
                continue
            try:
                parse_kafka_offsets(value, where=f"source.{name}")
            except InvalidInputError as exc:
                raise _fail(
                    f"source.{name}", f"'earliest', 'latest' or offsets JSON ({exc})"
                ) from exc
        if self.max_offsets_per_trigger is not None and (
            isinstance(self.max_offsets_per_trigger, bool)
            or not isinstance(self.max_offsets_per_trigger, int)
            or self.max_offsets_per_trigger < 1
        ):
            raise _fail("source.max_offsets_per_trigger", "must be 1 or more")
        for key in self.options:
            if not key.startswith("kafka.") and key not in _SPARK_SOURCE_OPTIONS:
                raise _fail(
                    f"source.options.{key}",
                    "unknown option: Kafka client settings start with 'kafka.'",
                )

    def spark_options(self) -> dict[str, str]:
        """The options of `spark.readStream.format("kafka")` (or `read` for a backfill)."""
        opts = {"kafka.bootstrap.servers": self.bootstrap_servers, **DEFAULT_SOURCE_OPTIONS}
        if self.subscribe:
            opts["subscribe"] = ",".join(self.subscribe)
        elif self.subscribe_pattern:
            opts["subscribePattern"] = self.subscribe_pattern
        else:
            opts["assign"] = json.dumps({t: list(ps) for t, ps in sorted(self.assign.items())})
        opts["startingOffsets"] = self.starting_offsets
        if self.ending_offsets is not None:
            opts["endingOffsets"] = self.ending_offsets
        if self.max_offsets_per_trigger is not None:
            opts["maxOffsetsPerTrigger"] = str(self.max_offsets_per_trigger)
        opts["failOnDataLoss"] = "true" if self.fail_on_data_loss else "false"
        opts.update(self.options)
        return opts


@dataclass(frozen=True)
class SinkSpec:
    """Where the job writes its output."""

    kind: str = field(
        metadata=described(
            "`kafka_exactly_once` (this package's transactional Kafka sink), `kafka` (Spark's "
            "at-least-once Kafka sink), `parquet` or `console`.",
            enum=list(SINK_KINDS),
        )
    )
    topic: str | None = field(
        default=None, metadata=described("The output topic: needed by the Kafka sinks.")
    )
    bootstrap_servers: str | None = field(
        default=None,
        metadata=described("The output cluster's bootstrap servers (None: the source's)."),
    )
    path: str | None = field(
        default=None,
        metadata=described("The output folder (a path or URL): needed by the `parquet` sink."),
    )
    output_mode: str = field(
        default="append",
        metadata=described("Spark's output mode.", enum=list(OUTPUT_MODES)),
    )
    sink_id: str | None = field(
        default=None,
        metadata=described(
            "The exactly-once sink's transactional id prefix (None: the job name).",
            pattern=_JOB_NAME.pattern,
        ),
    )
    transaction_timeout_ms: int | None = field(
        default=None,
        metadata=described(
            "The exactly-once sink's `transaction.timeout.ms` (None: the sink's default).",
            minimum=1000,
        ),
    )
    options: dict[str, str] = field(
        default_factory=dict,
        metadata=described(
            "Options of Spark's stream writer (for the `kafka` sink, `kafka.`-prefixed producer "
            "settings among them); the exactly-once sink's producers take `kafka_config`."
        ),
    )

    def validate(self) -> None:
        if self.kind not in SINK_KINDS:
            raise _fail("sink.kind", f"{self.kind!r} is not one of {list(SINK_KINDS)}")
        if self.kind.startswith("kafka") and not self.topic:
            raise _fail("sink.topic", f"a {self.kind} sink needs a topic")
        if self.kind == "parquet" and not self.path:
            raise _fail("sink.path", "a parquet sink needs a path")
        if self.output_mode not in OUTPUT_MODES:
            raise _fail(
                "sink.output_mode", f"{self.output_mode!r} is not one of {list(OUTPUT_MODES)}"
            )
        if self.sink_id is not None and not _JOB_NAME.match(self.sink_id):
            raise _fail("sink.sink_id", "letters, digits, '.', '_' and '-' only")
        if self.transaction_timeout_ms is not None and (
            isinstance(self.transaction_timeout_ms, bool)
            or not isinstance(self.transaction_timeout_ms, int)
            or self.transaction_timeout_ms < 1000
        ):
            raise _fail("sink.transaction_timeout_ms", "must be at least 1000")


@dataclass(frozen=True)
class JobSpec:
    """A streaming job: its Kafka source, its transformation, its sink, its checkpoint and
    how its driver runs. Each field's description is in its metadata (`described`), which the
    published JSON Schema (`kafkaspark spec schema`, `core/spec/schema.py`) is made from."""

    job_name: str = field(
        metadata=described(
            "The job's name: letters, digits, `.`, `_` and `-` (it becomes part of file, "
            "savepoint and consumer group names).",
            pattern=_JOB_NAME.pattern,
        )
    )
    source: KafkaSourceSpec = field(metadata=described("The Kafka source."))
    sink: SinkSpec = field(metadata=described("The sink."))
    checkpoint_location: str = field(
        metadata=described(
            "Spark's checkpoint, and beside it the control folder `_kafkaspark/`: a path, or "
            "a URL (`s3://`, `s3a://`, `file://`) every host of the job reaches.",
            minLength=1,
        )
    )
    transformation: str | None = field(
        default=None,
        metadata=described(
            "`package.module:function`, a function from DataFrame to DataFrame (not with "
            "`sql`; neither: the records as Spark reads them).",
            pattern=_CALLABLE.pattern,
        ),
    )
    sql: str | None = field(
        default=None,
        metadata=described("SQL over the temporary view `source` (not with `transformation`)."),
    )
    python_path: tuple[str, ...] = field(
        default=(),
        metadata=described(
            "Folders, `.zip`, `.egg` or `.whl` files put on the driver's and executors' Python "
            "path, so that the driver (a separate process) finds the transformation's module "
            "(`core/spec/job_code.py`); relative entries are relative to the DAG file's folder.",
            one_or_many=True,
            items={"pattern": "\\S"},
        ),
    )
    trigger_interval: str = field(
        default="5 seconds",
        metadata=described(
            "The micro-batch interval (`500 ms`, `5 seconds`, `1 minute`), or `availableNow`: "
            "read what is there, then stop.",
            anyOf=[{"const": "availableNow"}, {"pattern": _INTERVAL.pattern}],
        ),
    )
    spark_conf: dict[str, str] = field(
        default_factory=dict, metadata=described("Spark settings of the driver's session.")
    )
    spark_version: str | None = field(
        default=None,
        metadata=described(
            "The Spark release the driver runs, checked by the driver against its pyspark and "
            "by a restore against the savepoint's (None: whatever the driver has). A driver "
            "this host starts runs `spark_conf`'s `spark.pyspark.driver.python` when set.",
            enum=sorted(SPARK_LINES),
        ),
    )
    kafka_config: dict[str, str] = field(
        default_factory=dict,
        metadata=described(
            "librdkafka-style client settings (security): a submit fills them from the "
            "`kafka` connection's extra (or `--kafka-config-file`); the driver's admin "
            "client, lag commits and sink producers use them, and its Spark source and sink "
            "get their Java client equivalents."
        ),
    )
    lag_group: str | None = field(
        default=None,
        metadata=described(
            "The consumer group the driver commits each batch's end offsets to, for lag "
            'monitoring (None: `kafkaspark.<job_name>`; `""`: no lag commits).'
        ),
    )
    lease_ttl_s: float = field(
        default=30.0,
        metadata=described(
            "How long the driver's lease on the checkpoint lasts unless renewed (the driver "
            "renews it every third of it), in seconds.",
            minimum=3,
        ),
    )
    drain_timeout_s: float = field(
        default=120.0,
        metadata=described(
            "How long a graceful stop waits for the batch in flight to end.",
            exclusiveMinimum=0,
        ),
    )
    progress_batches: int = field(
        default=20,
        metadata=described(
            "How many recent batches the driver's `progress.json` keeps.", minimum=1, maximum=1000
        ),
    )
    standby_token: str | None = field(
        default=None,
        metadata=described(
            "Set by a standby submit (`handover.submit_standby`), never by hand: the driver "
            "warms up, then waits up to `standby_timeout_s` for a handover naming this token "
            "before it starts.",
            pattern=_JOB_NAME.pattern,
        ),
    )
    standby_timeout_s: float = field(
        default=900.0,
        metadata=described(
            "How long a standby driver waits for its handover before it exits.",
            exclusiveMinimum=0,
        ),
    )
    compat_check: bool = field(
        default=False,
        metadata=described(
            "Set by the upgrade's compatibility check (`lifecycle/compat_check.py`), never by "
            "hand: the driver runs one micro-batch on a copy of the checkpoint into Spark's "
            "`noop` sink, commits no lag offsets, and reports any failure of it as a bad job."
        ),
    )
    secret_env: dict[str, str] = field(
        default_factory=dict,
        metadata=described(
            "Set by a submit (`core/spec/secret_env.py`), never by hand: which settings a "
            "shipped spec leaves out because they are secrets, each with the variable that "
            "carries it to the driver (`kafka_config.sasl.password` -> "
            "`KAFKASPARK_SECRET_...`).",
            additionalProperties={"pattern": _SECRET_VARIABLE.pattern},
        ),
    )

    def validate(self) -> JobSpec:
        if not valid_job_name(self.job_name):
            shown = repr(self.job_name) if isinstance(self.job_name, str) else _kind(self.job_name)
            raise _fail("job_name", f"{shown[:120]}: letters, digits, '.', '_' and '-' only")
        self.source.validate()
        self.sink.validate()
        if not self.checkpoint_location or not isinstance(self.checkpoint_location, str):
            raise _fail("checkpoint_location", "must be a URL or path")
        if self.transformation and self.sql:
            raise _fail("transformation", "give a transformation or sql, not both")
        if self.transformation and not _CALLABLE.match(self.transformation):
            raise _fail("transformation", f"{self.transformation!r} is not 'module:function'")
        for i, entry in enumerate(self.python_path):
            if not isinstance(entry, str) or not entry.strip():
                raise _fail(f"python_path[{i}]", "must be a non-empty path or URL")
        if self.trigger_interval != "availableNow" and not _INTERVAL.match(self.trigger_interval):
            raise _fail(
                "trigger_interval", f"{self.trigger_interval!r}: e.g. '5 seconds' or 'availableNow'"
            )
        if _positive_finite("lease_ttl_s", self.lease_ttl_s) < 3:
            raise _fail("lease_ttl_s", "must be at least 3 seconds (heartbeat every ttl/3)")
        if _positive_finite("drain_timeout_s", self.drain_timeout_s) <= 0:
            raise _fail("drain_timeout_s", "must be positive")
        if (
            isinstance(self.progress_batches, bool)
            or not isinstance(self.progress_batches, int)
            or not 1 <= self.progress_batches <= 1000
        ):
            raise _fail("progress_batches", "must be between 1 and 1000")
        if self.spark_version is not None:
            if not isinstance(self.spark_version, str):
                raise _fail("spark_version", f"expected a string, got {_kind(self.spark_version)}")
            try:
                spark_line(self.spark_version)
            except InvalidInputError as exc:
                raise _fail("spark_version", str(exc)) from None
        if self.standby_token is not None and not valid_job_name(self.standby_token):
            raise _fail("standby_token", "letters, digits, '.', '_' and '-' only")
        if _positive_finite("standby_timeout_s", self.standby_timeout_s) <= 0:
            raise _fail("standby_timeout_s", "must be positive")
        if self.compat_check and self.standby_token is not None:
            raise _fail("compat_check", "a compatibility check runs no standby")
        for place, variable in self.secret_env.items():
            if not isinstance(variable, str) or not _SECRET_VARIABLE.match(variable):
                raise _fail(f"secret_env.{place}", "must name a KAFKASPARK_SECRET_ variable")
        return self

    @property
    def effective_lag_group(self) -> str | None:
        if self.lag_group == "":
            return None
        return self.lag_group or f"kafkaspark.{self.job_name}"

    @property
    def sink_bootstrap_servers(self) -> str:
        return self.sink.bootstrap_servers or self.source.bootstrap_servers

    def admin_config(self) -> dict[str, str]:
        """Client config for admin calls and producers: source servers + security settings."""
        return {**self.kafka_config, "bootstrap.servers": self.source.bootstrap_servers}

    # -- serialization ------------------------------------------------------------------

    def with_local_paths_absolute(self, base_dir: str) -> JobSpec:
        """The spec with a relative local `checkpoint_location` and `sink.path` made absolute
        against `base_dir`, so they mean the same to a driver running in another folder."""

        def absolute(path: str) -> str:
            if "://" in path or path.startswith("file:") or os.path.isabs(path):
                return path
            return os.path.normpath(os.path.join(base_dir, path))

        sink = self.sink
        if sink.path is not None:
            sink = replace(sink, path=absolute(sink.path))
        return replace(self, checkpoint_location=absolute(self.checkpoint_location), sink=sink)

    def to_dict(self, *, redact: bool = False) -> dict[str, Any]:
        raw = asdict(self)
        raw["python_path"] = list(self.python_path)
        raw["source"]["subscribe"] = list(self.source.subscribe)
        raw["source"]["assign"] = {t: list(p) for t, p in self.source.assign.items()}
        if redact:
            raw["kafka_config"] = redact_config(self.kafka_config)
            raw["source"]["options"] = redact_config(self.source.options)
            raw["sink"]["options"] = redact_config(self.sink.options)
        return raw

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, raw: Any) -> JobSpec:
        if not isinstance(raw, dict):
            raise _fail("(root)", "expected a JSON object")
        values = _known(cls, raw, "")
        for required in ("job_name", "source", "sink", "checkpoint_location"):
            if required not in values:
                raise _fail(required, "missing")
        if isinstance(values.get("python_path"), str):
            values["python_path"] = [values["python_path"]]
        if isinstance(values.get("python_path"), list):
            values["python_path"] = tuple(values["python_path"])
        source = _known(KafkaSourceSpec, values["source"], "source.")
        if "subscribe" in source:
            subscribe = source["subscribe"]
            if isinstance(subscribe, str):
                subscribe = [subscribe]
            if not isinstance(subscribe, list | tuple):
                raise _fail(
                    "source.subscribe", f"expected a list of topics, got {_kind(subscribe)}"
                )
            source["subscribe"] = tuple(subscribe)
        if "assign" in source:
            if not isinstance(source["assign"], dict):
                raise _fail(
                    "source.assign",
                    f"expected an object of topic -> partitions, got {_kind(source['assign'])}",
                )
            assign: dict[str, tuple[int, ...]] = {}
            for topic, partitions in source["assign"].items():
                if not isinstance(partitions, list | tuple):
                    raise _fail(
                        f"source.assign.{topic}",
                        f"expected a list of partition numbers, got {_kind(partitions)}",
                    )
                assign[topic] = tuple(partitions)
            source["assign"] = assign
        values["source"] = _build(KafkaSourceSpec, source, "source")
        values["sink"] = _build(SinkSpec, _known(SinkSpec, values["sink"], "sink."), "sink")
        return _build(cls, values, "(root)").validate()

    @classmethod
    def from_json(cls, text: str, *, where: str = "job spec") -> JobSpec:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise JobSpecError(f"{where}: not JSON ({exc.msg} at char {exc.pos})") from exc
        return cls.from_dict(raw)

    @classmethod
    def load(cls, path: str | Path) -> JobSpec:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise JobSpecError(f"{path}: cannot read the job spec ({exc.strerror})") from exc
        return cls.from_json(text, where=str(path))


def redact_config(config: dict[str, str]) -> dict[str, str]:
    return redact(config)


def _known(kind: type[Any], raw: Any, prefix: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _fail(prefix.rstrip(".") or "(root)", "expected a JSON object")
    names = {f.name for f in fields(kind)}
    unknown = sorted(set(raw) - names)
    if unknown:
        raise _fail(f"{prefix}{unknown[0]}", f"unknown field (known: {sorted(names)})")
    return dict(raw)


_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "dict": (dict,),
    "tuple": (tuple, list),
    "None": (type(None),),
}


def _check_type(annotation: str, value: Any) -> bool:
    """Check a JSON value against a field annotation such as `int | None` (strings, since
    annotations are not evaluated here)."""
    for part in annotation.split("|"):
        allowed = _TYPES.get(part.strip().split("[")[0])
        if allowed is None:
            return True  # a nested spec; validated by its own class
        if isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed):
            return True
    return False


def _build(kind: type[T], values: dict[str, Any], where: str) -> T:
    prefix = "" if where == "(root)" else f"{where}."
    for f in fields(kind):  # type: ignore[arg-type]
        if f.name in values and not _check_type(str(f.type), values[f.name]):
            # The type of what was given, never the value: options and kafka_config may hold
            # a password or a JAAS line.
            raise _fail(f"{prefix}{f.name}", f"expected {f.type}, got {_kind(values[f.name])}")
    try:
        return kind(**values)
    except TypeError as exc:  # a message about arguments, not their values
        raise _fail(where, str(exc)) from exc
