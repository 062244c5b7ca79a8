"""Bad input across the public surface: job specs, connections, savepoint ids and paths,
checkpoint files, operator arguments; at least 40 cases, each a typed error and no file
changed (checked by hashing the trees before and after).

One short Spark run of the stateless job makes a real checkpoint and a savepoint of it. Each
case then gets its own copy of both, breaks one thing, hashes the copy, makes the failing
call, and hashes again. A case passes when the call raises one of the package's errors
(`KafkaSparkError`; an operator's `AirflowFailException` counts too, see `_classify`), the
message contains the text the case names (the field, file, topic, id or connection at
fault), and the copy is byte for byte and mode for mode what it was.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import stat
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from reliability import stack
from reliability.model import Profile, ScenarioResult

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore

NAME = "bad_input"
TITLE = (
    "Bad input across the public surface: job specs, connections, savepoint ids and paths, "
    "checkpoint files, operator arguments; each a typed error and no file changed"
)

AREAS = ("job_spec", "connection", "savepoint", "checkpoint", "operator")
MIN_CASES = 40
SOURCE, SINK, JOB = "bad_input_source", "bad_input_sink", "bad_input_seed"
# Loopback port 1: nothing listens there, so a connect is refused at once.
DEAD_SERVER = "127.0.0.1:1"


# -- the corpus -------------------------------------------------------------------------------


@dataclass
class Ctx:
    """One case's own copy of the seed checkpoint and savepoint, and its connections."""

    root: Path
    sid: str
    env: dict[str, str | None] = field(default_factory=dict)

    @property
    def cp(self) -> Path:
        return self.root / "checkpoint"

    @property
    def sp_root(self) -> Path:
        return self.root / "savepoints"

    @property
    def sp_dir(self) -> Path:
        return self.sp_root / self.sid

    @property
    def store(self) -> SavepointStore:
        from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore

        return SavepointStore(str(self.sp_root))

    @property
    def last(self) -> int:
        return max(int(f.name) for f in (self.cp / "offsets").iterdir() if f.name.isdigit())

    def offsets_file(self) -> Path:
        return self.cp / "offsets" / str(self.last)

    def control(self, name: str) -> Path:
        folder = self.cp / "_kafkaspark"
        folder.mkdir(exist_ok=True)
        return folder / name

    def rewrite_manifest(self, change: Callable[[dict[str, Any]], None]) -> None:
        """Tamper with the manifest *and* re-seal it, so only the content checks can tell."""
        path = self.sp_dir / "manifest.json"
        raw = json.loads(path.read_text())
        change(raw)
        text = json.dumps(raw)
        path.write_text(text)
        digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
        (self.sp_dir / "_COMPLETE").write_text(digest)

    def connection(self, conn_id: str, **fields: Any) -> str:
        """An Airflow `kafka` connection, given to Airflow as `AIRFLOW_CONN_<ID>` JSON."""
        from airflow.models import Connection

        conn = Connection(conn_id=conn_id, conn_type="kafka", **fields)
        return self.raw_connection(conn_id, conn.as_json())

    def raw_connection(self, conn_id: str, value: str) -> str:
        """A connection Airflow's `Connection` class would refuse to build (bad extra)."""
        key = f"AIRFLOW_CONN_{conn_id.upper()}"
        self.env.setdefault(key, os.environ.get(key))
        os.environ[key] = value
        return conn_id

    def kafka_connection(self, conn_id: str, extra: dict[str, Any]) -> str:
        return self.connection(conn_id, extra=json.dumps(extra))

    def spec(self, **changes: Any) -> dict[str, Any]:
        """A valid job spec dict on this case's checkpoint, with top-level changes."""
        spec: dict[str, Any] = {
            "job_name": "corpus",
            "source": {"bootstrap_servers": DEAD_SERVER, "subscribe": [SOURCE]},
            "sink": {"kind": "kafka_exactly_once", "topic": SINK},
            "checkpoint_location": str(self.cp),
            "trigger_interval": "1 second",
        }
        spec.update(changes)
        return spec

    def source(self, **changes: Any) -> dict[str, Any]:
        spec = self.spec()
        spec["source"].update(changes)
        return spec

    def sink(self, **changes: Any) -> dict[str, Any]:
        spec = self.spec()
        spec["sink"] = changes
        return spec

    def restore_env(self) -> None:
        for key, value in self.env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self.env.clear()


class Trial(NamedTuple):
    act: Callable[[], object]
    expect: str  # text the error message must contain


@dataclass(frozen=True)
class Case:
    name: str
    area: str
    prepare: Callable[[Ctx], Trial]


CASES: list[Case] = []


def case(area: str) -> Callable[[Callable[[Ctx], Trial]], Callable[[Ctx], Trial]]:
    assert area in AREAS, area

    def register(prepare: Callable[[Ctx], Trial]) -> Callable[[Ctx], Trial]:
        CASES.append(Case(prepare.__name__, area, prepare))
        return prepare

    return register


def from_dict(raw: object) -> Callable[[], object]:
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

    return lambda: JobSpec.from_dict(raw)


def position(ctx: Ctx) -> Callable[[], object]:
    from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader

    return lambda: CheckpointReader(str(ctx.cp)).position()


def restore_into(ctx: Ctx, ref: str | None, mode: str = "checkpoint") -> Callable[[], object]:
    from airflow_provider_kafkaspark.core.state.restore import restore

    return lambda: restore(ctx.store, ref, str(ctx.root / "target"), mode)


def unchecked(value: object) -> Any:
    """A value of the wrong type, as a DAG file that nobody type-checks passes it."""
    return value


def task_context(**values: Any) -> Context:
    """What the operators read from Airflow's context; outlet events accept any asset."""
    return cast("Context", {"outlet_events": defaultdict(SimpleNamespace), **values})


# -- job specs ----------------------------------------------------------------------------


@case("job_spec")
def spec_not_an_object(ctx: Ctx) -> Trial:
    return Trial(from_dict([ctx.spec()]), "(root)")


@case("job_spec")
def spec_missing_job_name(ctx: Ctx) -> Trial:
    spec = ctx.spec()
    del spec["job_name"]
    return Trial(from_dict(spec), "'job_name'")


@case("job_spec")
def spec_job_name_with_separator(ctx: Ctx) -> Trial:
    return Trial(from_dict(ctx.spec(job_name="../jobs/evil")), "'job_name'")


@case("job_spec")
def spec_unknown_field(ctx: Ctx) -> Trial:
    return Trial(from_dict(ctx.spec(jobname="typo")), "'jobname'")


@case("job_spec")
def spec_two_subscriptions(ctx: Ctx) -> Trial:
    return Trial(from_dict(ctx.source(subscribe_pattern="bad_.*")), "'source.subscribe'")


@case("job_spec")
def spec_topic_with_comma(ctx: Ctx) -> Trial:
    return Trial(from_dict(ctx.source(subscribe=["a,b"])), "'a,b'")


@case("job_spec")
def spec_subscribe_not_a_list(ctx: Ctx) -> Trial:
    return Trial(from_dict(ctx.source(subscribe=5)), "source.subscribe")


@case("job_spec")
def spec_assign_partitions_not_a_list(ctx: Ctx) -> Trial:
    return Trial(from_dict(ctx.source(subscribe=[], assign={SOURCE: 5})), "source.assign")


@case("job_spec")
def spec_assign_negative_partition(ctx: Ctx) -> Trial:
    spec = ctx.source(subscribe=[], assign={SOURCE: [0, -1]})
    return Trial(from_dict(spec), f"source.assign.{SOURCE}")


@case("job_spec")
def spec_starting_offsets_garbage(ctx: Ctx) -> Trial:
    return Trial(from_dict(ctx.source(starting_offsets="yesterday")), "source.starting_offsets")


@case("job_spec")
def spec_max_offsets_as_string(ctx: Ctx) -> Trial:
    spec = ctx.source(max_offsets_per_trigger="10")
    return Trial(from_dict(spec), "source.max_offsets_per_trigger")


@case("job_spec")
def spec_source_option_without_prefix(ctx: Ctx) -> Trial:
    spec = ctx.source(options={"fetch.max.bytes": "1"})
    return Trial(from_dict(spec), "source.options.fetch.max.bytes")


@case("job_spec")
def spec_unknown_sink_kind(ctx: Ctx) -> Trial:
    return Trial(from_dict(ctx.sink(kind="kafka_maybe_once", topic=SINK)), "sink.kind")


@case("job_spec")
def spec_kafka_sink_without_topic(ctx: Ctx) -> Trial:
    return Trial(from_dict(ctx.sink(kind="kafka")), "sink.topic")


@case("job_spec")
def spec_bad_output_mode(ctx: Ctx) -> Trial:
    spec = ctx.sink(kind="parquet", path=str(ctx.root / "out"), output_mode="overwrite")
    return Trial(from_dict(spec), "sink.output_mode")


@case("job_spec")
def spec_transformation_and_sql(ctx: Ctx) -> Trial:
    spec = ctx.spec(transformation="pkg.mod:fn", sql="SELECT * FROM source")
    return Trial(from_dict(spec), "'transformation'")


@case("job_spec")
def spec_bad_trigger_interval(ctx: Ctx) -> Trial:
    return Trial(from_dict(ctx.spec(trigger_interval="often")), "'trigger_interval'")


@case("job_spec")
def spec_lease_ttl_not_a_number(ctx: Ctx) -> Trial:
    # Python's json reads NaN, and NaN < 3 is false: the driver fails later, on int(NaN).
    return Trial(from_dict(ctx.spec(lease_ttl_s=math.nan)), "lease_ttl_s")


@case("job_spec")
def spec_file_not_json(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

    path = ctx.root / "broken.spec.json"
    path.write_text('{"job_name": "corpus",')
    return Trial(lambda: JobSpec.load(path), "broken.spec.json")


@case("job_spec")
def spec_file_missing(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

    return Trial(lambda: JobSpec.load(ctx.root / "absent.spec.json"), "absent.spec.json")


# -- connections --------------------------------------------------------------------------


@case("connection")
def conn_not_defined(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

    return Trial(
        lambda: KafkaSparkHook("bad_input_nowhere").kafka_spec_config(), "bad_input_nowhere"
    )


@case("connection")
def conn_without_bootstrap_servers(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

    conn = ctx.kafka_connection("bi_no_servers", {"security.protocol": "PLAINTEXT"})
    return Trial(lambda: KafkaSparkHook(conn).kafka_spec_config(), conn)


@case("connection")
def conn_empty_bootstrap_servers(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

    conn = ctx.kafka_connection("bi_empty_servers", {"bootstrap.servers": ""})
    return Trial(lambda: KafkaSparkHook(conn).kafka_client_config(), conn)


@case("connection")
def conn_host_field_instead_of_extra(ctx: Ctx) -> Trial:
    # The Kafka connection form hides host and port; a URI sets them all the same.
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

    conn = ctx.connection("bi_host_only", host="broker.example", port=9092)
    return Trial(lambda: KafkaSparkHook(conn).kafka_spec_config(), conn)


@case("connection")
def conn_extra_not_json(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

    conn = ctx.raw_connection(
        "bi_extra_garbage", json.dumps({"conn_type": "kafka", "extra": "{bootstrap.servers"})
    )
    return Trial(lambda: KafkaSparkHook(conn).kafka_spec_config(), conn)


@case("connection")
def conn_extra_is_a_list(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

    conn = ctx.raw_connection(
        "bi_extra_list", json.dumps({"conn_type": "kafka", "extra": json.dumps([DEAD_SERVER])})
    )
    return Trial(lambda: KafkaSparkHook(conn).kafka_spec_config(), conn)


@case("connection")
def conn_bootstrap_servers_not_a_string(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

    conn = ctx.kafka_connection("bi_servers_int", {"bootstrap.servers": 9092})
    return Trial(lambda: KafkaSparkHook(conn).kafka_client_config(), conn)


@case("connection")
def conn_callback_not_allowed(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

    conn = ctx.kafka_connection(
        "bi_callback", {"bootstrap.servers": DEAD_SERVER, "error_cb": "os.system"}
    )
    return Trial(lambda: KafkaSparkHook(conn).kafka_client_config(), "error_cb")


@case("connection")
def conn_unknown_client_setting(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator

    conn = ctx.kafka_connection(
        "bi_unknown_key", {"bootstrap.servers": DEAD_SERVER, "fetch.wait.forever": "1"}
    )
    op = KafkaPartitionReconcileOperator(
        task_id="reconcile", checkpoint=str(ctx.cp), kafka_conn_id=conn, kafka_timeout_s=2
    )
    return Trial(lambda: op.execute(task_context()), "fetch.wait.forever")


@case("connection")
def conn_bad_security_protocol(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator

    conn = ctx.kafka_connection(
        "bi_bad_protocol", {"bootstrap.servers": DEAD_SERVER, "security.protocol": "SASL_TLS"}
    )
    op = KafkaPartitionReconcileOperator(
        task_id="reconcile", checkpoint=str(ctx.cp), kafka_conn_id=conn, kafka_timeout_s=2
    )
    return Trial(lambda: op.execute(task_context()), "security.protocol")


@case("connection")
def conn_dead_host(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator

    conn = ctx.kafka_connection("bi_dead_host", {"bootstrap.servers": DEAD_SERVER})
    op = SubmitStreamingJobOperator(
        task_id="submit",
        job_spec=ctx.spec(),
        kafka_conn_id=conn,
        workdir=str(ctx.root / "drivers"),
        probe_timeout_s=2,
    )
    return Trial(lambda: op.execute(task_context()), conn)


@case("connection")
def conn_port_not_a_number(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator

    conn = ctx.kafka_connection("bi_bad_port", {"bootstrap.servers": "127.0.0.1:kafka"})
    op = SubmitStreamingJobOperator(
        task_id="submit",
        job_spec=ctx.spec(),
        kafka_conn_id=conn,
        workdir=str(ctx.root / "drivers"),
        probe_timeout_s=2,
    )
    return Trial(lambda: op.execute(task_context()), "'kafka'")


@case("connection")
def conn_health_sensor_without_servers(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor

    conn = ctx.kafka_connection("bi_sensor_no_servers", {"client.id": "x"})
    sensor = StreamingHealthSensor(
        task_id="healthy", checkpoint=str(ctx.cp), kafka_conn_id=conn, kafka_timeout_s=2
    )
    return Trial(lambda: sensor.poke(task_context()), conn)


# -- savepoint ids and paths ------------------------------------------------------------


@case("savepoint")
def sp_show_traversal_id(ctx: Ctx) -> Trial:
    return Trial(lambda: ctx.store.show("../../etc"), "'../../etc'")


@case("savepoint")
def sp_restore_id_with_slash(ctx: Ctx) -> Trial:
    return Trial(restore_into(ctx, f"{ctx.sid}/checkpoint"), f"'{ctx.sid}/checkpoint'")


@case("savepoint")
def sp_dispose_traversal_id(ctx: Ctx) -> Trial:
    # Would delete the live checkpoint next to the savepoint root if the id were trusted.
    return Trial(lambda: ctx.store.dispose("../checkpoint"), "'../checkpoint'")


@case("savepoint")
def sp_verify_hidden_id(ctx: Ctx) -> Trial:
    return Trial(lambda: ctx.store.verify(".hidden"), "'.hidden'")


@case("savepoint")
def sp_id_too_long(ctx: Ctx) -> Trial:
    sid = "s" * 161
    return Trial(lambda: ctx.store.show(sid), sid)


@case("savepoint")
def sp_show_unknown_id(ctx: Ctx) -> Trial:
    return Trial(lambda: ctx.store.show("nope-123"), "nope-123")


@case("savepoint")
def sp_create_with_traversal_id(ctx: Ctx) -> Trial:
    act = lambda: ctx.store.create(str(ctx.cp), job_name=JOB, savepoint_id="../escape")  # noqa: E731
    return Trial(act, "'../escape'")


@case("savepoint")
def sp_create_existing_id(ctx: Ctx) -> Trial:
    act = lambda: ctx.store.create(str(ctx.cp), job_name=JOB, savepoint_id=ctx.sid)  # noqa: E731
    return Trial(act, f"{ctx.sid} already exists")


@case("savepoint")
def sp_dispose_in_use(ctx: Ctx) -> Trial:
    ctx.store.mark_in_use(ctx.sid)
    return Trial(lambda: ctx.store.dispose(ctx.sid), ctx.sid)


@case("savepoint")
def sp_root_without_filesystem(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore

    return Trial(lambda: SavepointStore("nosuchfs://bucket/savepoints"), "nosuchfs://")


@case("savepoint")
def sp_latest_of_unknown_job(ctx: Ctx) -> Trial:
    return Trial(lambda: ctx.store.resolve("latest", "no_such_job"), "no_such_job")


@case("savepoint")
def sp_manifest_not_json(ctx: Ctx) -> Trial:
    (ctx.sp_dir / "manifest.json").write_text("{")
    return Trial(lambda: ctx.store.show(ctx.sid), f"{ctx.sid}/manifest.json")


@case("savepoint")
def sp_manifest_for_another_savepoint(ctx: Ctx) -> Trial:
    ctx.rewrite_manifest(lambda m: m.update(savepoint_id="someone-else"))
    return Trial(lambda: ctx.store.show(ctx.sid), "someone-else")


@case("savepoint")
def sp_manifest_path_traversal(ctx: Ctx) -> Trial:
    def evil(m: dict[str, Any]) -> None:
        m["files"] = [{"path": "../../../etc/passwd", "size": 1, "sha256": "sha256:0"}]

    ctx.rewrite_manifest(evil)
    return Trial(restore_into(ctx, ctx.sid), "'../../../etc/passwd'")


@case("savepoint")
def sp_manifest_unknown_format(ctx: Ctx) -> Trial:
    ctx.rewrite_manifest(lambda m: m.update(format_version=99))
    return Trial(lambda: ctx.store.show(ctx.sid), "manifest format 99")


@case("savepoint")
def sp_manifest_field_wrong_type(ctx: Ctx) -> Trial:
    ctx.rewrite_manifest(lambda m: m.update(last_committed_batch="three"))
    return Trial(lambda: ctx.store.show(ctx.sid), f"{ctx.sid}/manifest.json")


@case("savepoint")
def sp_manifest_changed_after_completion(ctx: Ctx) -> Trial:
    path = ctx.sp_dir / "manifest.json"
    raw = json.loads(path.read_text())
    raw["query_id"] = "another-query"
    path.write_text(json.dumps(raw))
    return Trial(restore_into(ctx, ctx.sid), "manifest.json: changed after")


@case("savepoint")
def sp_incomplete(ctx: Ctx) -> Trial:
    (ctx.sp_dir / "_COMPLETE").unlink()
    return Trial(restore_into(ctx, ctx.sid), f"{ctx.sid}: incomplete")


@case("savepoint")
def sp_restore_into_non_empty_target(ctx: Ctx) -> Trial:
    (ctx.root / "target").mkdir()
    (ctx.root / "target" / "keep.txt").write_text("someone's data")
    return Trial(restore_into(ctx, ctx.sid), str(ctx.root / "target"))


@case("savepoint")
def sp_restore_unknown_mode(ctx: Ctx) -> Trial:
    return Trial(restore_into(ctx, ctx.sid, mode="sideways"), "'sideways'")


@case("savepoint")
def sp_offsets_restore_with_pending_batch(ctx: Ctx) -> Trial:
    (ctx.cp / "commits" / str(ctx.last)).unlink()
    pending = ctx.store.create(str(ctx.cp), job_name=JOB, savepoint_id="pending-1").savepoint_id
    return Trial(restore_into(ctx, pending, mode="offsets"), f"pending batch {ctx.last}")


# -- checkpoint files ---------------------------------------------------------------------


@case("checkpoint")
def cp_empty_offsets_entry(ctx: Ctx) -> Trial:
    ctx.offsets_file().write_text("")
    return Trial(position(ctx), f"offsets/{ctx.last}")


@case("checkpoint")
def cp_truncated_offsets_entry(ctx: Ctx) -> Trial:
    ctx.offsets_file().write_text("v1\n")
    return Trial(position(ctx), f"offsets/{ctx.last}")


@case("checkpoint")
def cp_offsets_metadata_not_json(ctx: Ctx) -> Trial:
    ctx.offsets_file().write_text(f'v1\n{{"batchWatermarkMs":\n{{"{SOURCE}":{{"0":1}}}}\n')
    return Trial(position(ctx), f"offsets/{ctx.last}")


@case("checkpoint")
def cp_source_line_not_json(ctx: Ctx) -> Trial:
    ctx.offsets_file().write_text(f'v1\n{{"batchWatermarkMs":0}}\n{{"{SOURCE}":{{"0":\n')
    return Trial(position(ctx), f"offsets/{ctx.last}")


@case("checkpoint")
def cp_newer_log_version(ctx: Ctx) -> Trial:
    text = ctx.offsets_file().read_text()
    ctx.offsets_file().write_text("v9" + text[2:])
    return Trial(position(ctx), f"offsets/{ctx.last}")


@case("checkpoint")
def cp_offsets_not_utf8(ctx: Ctx) -> Trial:
    ctx.offsets_file().write_bytes(b"v1\n\xff\xfe\x00\x81garbage\n")
    return Trial(position(ctx), f"offsets/{ctx.last}")


@case("checkpoint")
def cp_offsets_entry_is_a_folder(ctx: Ctx) -> Trial:
    entry = ctx.offsets_file()
    entry.unlink()
    entry.mkdir()
    return Trial(position(ctx), f"offsets/{ctx.last}")


@case("checkpoint")
def cp_kafka_offset_not_a_number(ctx: Ctx) -> Trial:
    ctx.offsets_file().write_text(f'v1\n{{"batchWatermarkMs":0}}\n{{"{SOURCE}":{{"0":"abc"}}}}\n')
    return Trial(position(ctx), SOURCE)


@case("checkpoint")
def cp_negative_partition(ctx: Ctx) -> Trial:
    ctx.offsets_file().write_text(f'v1\n{{"batchWatermarkMs":0}}\n{{"{SOURCE}":{{"-1":5}}}}\n')
    return Trial(position(ctx), SOURCE)


@case("checkpoint")
def cp_missing_metadata(ctx: Ctx) -> Trial:
    (ctx.cp / "metadata").unlink()
    return Trial(position(ctx), "metadata")


@case("checkpoint")
def cp_metadata_without_id(ctx: Ctx) -> Trial:
    (ctx.cp / "metadata").write_text('{"query": "x"}')
    return Trial(position(ctx), "checkpoint/metadata")


@case("checkpoint")
def cp_commit_without_offsets(ctx: Ctx) -> Trial:
    orphan = ctx.last + 3
    (ctx.cp / "commits" / str(orphan)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return Trial(position(ctx), f"commits/{orphan}")


@case("checkpoint")
def cp_gap_in_offsets_log(ctx: Ctx) -> Trial:
    (ctx.cp / "offsets" / "1").unlink()
    act = lambda: ctx.store.create(str(ctx.cp), job_name=JOB)  # noqa: E731
    return Trial(act, "batches missing [1]")


@case("checkpoint")
def cp_commit_watermark_not_a_number(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.lifecycle.observe import latest_committed

    (ctx.cp / "commits" / str(ctx.last)).write_text('v1\n{"nextBatchWatermarkMs": "soon"}')
    return Trial(lambda: latest_committed(str(ctx.cp)), f"commits/{ctx.last}")


@case("checkpoint")
def cp_nothing_at_location(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader

    empty = ctx.root / "empty"
    empty.mkdir()
    return Trial(lambda: CheckpointReader(str(empty)).position(), str(empty))


@case("checkpoint")
def cp_savepoint_file_corrupt(ctx: Ctx) -> Trial:
    (ctx.sp_dir / "checkpoint" / "commits" / "0").write_text("v1\n{}\n")
    return Trial(restore_into(ctx, ctx.sid), "commits/0")


@case("checkpoint")
def cp_savepoint_file_missing(ctx: Ctx) -> Trial:
    (ctx.sp_dir / "checkpoint" / "sources" / "0" / "0").unlink()
    return Trial(restore_into(ctx, ctx.sid), "sources/0/0")


@case("checkpoint")
def cp_lease_not_json(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.core.control.folder import ControlFolder

    ctx.control("lease.json").write_text("owner=me")
    return Trial(lambda: ControlFolder(str(ctx.cp)).read_lease(), "_kafkaspark/lease.json")


@case("checkpoint")
def cp_progress_unknown_fields(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.core.control.folder import ControlFolder

    ctx.control("progress.json").write_text('{"query_id": "q", "surprise": 1}')
    return Trial(lambda: ControlFolder(str(ctx.cp)).read_progress(), "surprise")


@case("checkpoint")
def cp_stopped_report_not_an_object(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.core.control.folder import ControlFolder

    ctx.control("stopped.json").write_text("[]")
    return Trial(lambda: ControlFolder(str(ctx.cp)).read_stopped(), "_kafkaspark/stopped.json")


@case("checkpoint")
def cp_reconcile_on_garbage_metadata(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator

    (ctx.cp / "metadata").write_text("{id: nope}")
    conn = ctx.kafka_connection("bi_reconcile", {"bootstrap.servers": DEAD_SERVER})
    op = KafkaPartitionReconcileOperator(
        task_id="reconcile", checkpoint=str(ctx.cp), kafka_conn_id=conn, kafka_timeout_s=2
    )
    return Trial(lambda: op.execute(task_context()), "checkpoint/metadata")


@case("checkpoint")
def cp_restore_operator_on_corrupt_savepoint(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.operators.submit import RestoreStreamingJobOperator

    (ctx.sp_dir / "checkpoint" / "offsets" / "0").write_text("v1\n{}\n-\n")
    conn = ctx.kafka_connection("bi_restore", {"bootstrap.servers": DEAD_SERVER})
    op = RestoreStreamingJobOperator(
        task_id="restore",
        job_spec=ctx.spec(job_name=JOB),
        kafka_conn_id=conn,
        savepoint_root=str(ctx.sp_root),
        workdir=str(ctx.root / "drivers"),
        probe_bootstrap=False,
    )
    return Trial(lambda: op.execute(task_context()), "offsets/0")


# -- operator and sensor arguments ------------------------------------------------------


def _submit(ctx: Ctx, **kwargs: Any) -> Callable[[], object]:
    """Build and execute a submit operator; building is part of the call under test."""
    from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator

    conn = ctx.kafka_connection("bi_submit", {"bootstrap.servers": DEAD_SERVER})
    values: dict[str, Any] = {
        "task_id": "submit",
        "job_spec": ctx.spec(),
        "kafka_conn_id": conn,
        "workdir": str(ctx.root / "drivers"),
        "probe_bootstrap": False,
        **kwargs,
    }
    return lambda: SubmitStreamingJobOperator(**values).execute(task_context())


def _stop(ctx: Ctx, **kwargs: Any) -> Callable[[], object]:
    from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator

    values: dict[str, Any] = {
        "task_id": "stop",
        "checkpoint": str(ctx.cp),
        "job_name": JOB,
        "savepoint_root": str(ctx.sp_root),
        "drain_timeout_s": 5,
        **kwargs,
    }
    return lambda: StopStreamingJobOperator(**values).execute(task_context())


@case("operator")
def op_submit_unknown_if_running(ctx: Ctx) -> Trial:
    return Trial(_submit(ctx, if_running="sometimes"), "if_running")


@case("operator")
def op_submit_spec_text_not_json(ctx: Ctx) -> Trial:
    return Trial(_submit(ctx, job_spec='{"job_name": "corpus",'), "job_spec")


@case("operator")
def op_submit_bad_spec_field(ctx: Ctx) -> Trial:
    return Trial(_submit(ctx, job_spec=ctx.spec(trigger_interval="often")), "trigger_interval")


@case("operator")
def op_submit_restore_without_root(ctx: Ctx) -> Trial:
    return Trial(_submit(ctx, restore_from="latest"), "savepoint_root")


@case("operator")
def op_submit_restore_traversal_id(ctx: Ctx) -> Trial:
    act = _submit(ctx, restore_from="../checkpoint", savepoint_root=str(ctx.sp_root))
    return Trial(act, "'../checkpoint'")


@case("operator")
def op_submit_unknown_restore_mode(ctx: Ctx) -> Trial:
    act = _submit(
        ctx, restore_from=ctx.sid, restore_mode="sideways", savepoint_root=str(ctx.sp_root)
    )
    return Trial(act, "'sideways'")


@case("operator")
def op_restore_with_no_savepoint(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.operators.submit import RestoreStreamingJobOperator

    conn = ctx.kafka_connection("bi_restore_empty", {"bootstrap.servers": DEAD_SERVER})
    op = RestoreStreamingJobOperator(
        task_id="restore",
        job_spec=ctx.spec(),
        kafka_conn_id=conn,
        savepoint_root=str(ctx.root / "no-savepoints"),
        workdir=str(ctx.root / "drivers"),
        probe_bootstrap=False,
    )
    return Trial(lambda: op.execute(task_context()), "no-savepoints")


@case("operator")
def op_stop_handle_not_a_dict(ctx: Ctx) -> Trial:
    return Trial(_stop(ctx, handle="pid 4242 on worker-3"), "handle")


@case("operator")
def op_stop_handle_pid_not_a_number(ctx: Ctx) -> Trial:
    return Trial(_stop(ctx, handle={"pid": "driver-1"}), "pid")


@case("operator")
def op_stop_job_name_with_separator(ctx: Ctx) -> Trial:
    return Trial(_stop(ctx, job_name="../other_job"), "job_name")


@case("operator")
def op_stop_missing_checkpoint(ctx: Ctx) -> Trial:
    missing = ctx.root / "no-checkpoint"
    return Trial(_stop(ctx, checkpoint=str(missing)), str(missing))


@case("operator")
def op_reconcile_unknown_severity(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator

    act = lambda: KafkaPartitionReconcileOperator(  # noqa: E731
        task_id="reconcile", checkpoint=str(ctx.cp), fail_on="SEVERE"
    )
    return Trial(act, "fail_on")


@case("operator")
def op_reconcile_timeout_as_text(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator

    act = lambda: KafkaPartitionReconcileOperator(  # noqa: E731
        task_id="reconcile", checkpoint=str(ctx.cp), kafka_timeout_s=unchecked("10s")
    )
    return Trial(act, "kafka_timeout_s")


@case("operator")
def op_health_window_zero(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor

    act = lambda: StreamingHealthSensor(  # noqa: E731
        task_id="healthy", checkpoint=str(ctx.cp), window_s=0
    )
    return Trial(act, "window_s")


@case("operator")
def op_health_min_new_batches_as_text(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor

    act = lambda: StreamingHealthSensor(  # noqa: E731
        task_id="healthy", checkpoint=str(ctx.cp), min_new_batches=unchecked("3")
    )
    return Trial(act, "min_new_batches")


@case("operator")
def op_health_unknown_status(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor

    act = lambda: StreamingHealthSensor(  # noqa: E731
        task_id="healthy", checkpoint=str(ctx.cp), fail_on=["STALLED", "ON_FIRE"]
    )
    return Trial(act, "ON_FIRE")


@case("operator")
def op_health_since_batch_garbage(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor

    conn = ctx.kafka_connection("bi_health", {"bootstrap.servers": DEAD_SERVER})
    sensor = StreamingHealthSensor(
        task_id="healthy",
        checkpoint=str(ctx.cp),
        kafka_conn_id=conn,
        since_batch="{'since_batch': 3}",
        kafka_timeout_s=2,
    )
    return Trial(lambda: sensor.poke(task_context()), "since_batch")


@case("operator")
def op_bootstrap_sensor_timeout_as_text(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.sensors.bootstrap import KafkaBootstrapHealthSensor

    act = lambda: KafkaBootstrapHealthSensor(task_id="bootstrap", timeout_s=unchecked("fast"))  # noqa: E731
    return Trial(act, "timeout_s")


@case("operator")
def op_backfill_without_interval(ctx: Ctx) -> Trial:
    from airflow_provider_kafkaspark.operators.backfill import KafkaBackfillOperator

    op = KafkaBackfillOperator(
        task_id="backfill", job_spec=ctx.spec(), output_root=str(ctx.root / "backfill")
    )
    context = task_context(data_interval_start=None, data_interval_end=None)
    return Trial(lambda: op.execute(context), "data interval")


# -- running the corpus ---------------------------------------------------------------------


def tree_state(root: Path) -> dict[str, str]:
    """Every path under `root` with its type, permission bits and content hash."""
    state: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        mode = oct(stat.S_IMODE(info.st_mode))
        if stat.S_ISREG(info.st_mode):
            state[str(path.relative_to(root))] = (
                f"file {mode} {hashlib.sha256(path.read_bytes()).hexdigest()}"
            )
        else:
            state[str(path.relative_to(root))] = f"{stat.S_IFMT(info.st_mode):o} {mode}"
    return state


def tree_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    return [f"+{p}" for p in added] + [f"-{p}" for p in removed] + [f"~{p}" for p in changed]


def _project_error_in_chain(exc: BaseException) -> bool:
    from airflow_provider_kafkaspark.errors import KafkaSparkError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KafkaSparkError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _classify(exc: BaseException | None) -> tuple[str, str | None]:
    """(kind, problem): kind is `typed`, `airflow_fail` (an operator failing its task on
    purpose: no retry), `untyped` or `none`; problem is None when the kind is accepted."""
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_provider_kafkaspark.errors import KafkaSparkError

    if exc is None:
        return "none", "no error raised"
    if isinstance(exc, KafkaSparkError):
        return "typed", None
    if isinstance(exc, AirflowFailException):
        return "airflow_fail", None
    kind = f"{type(exc).__module__}.{type(exc).__qualname__}"
    return "untyped", f"untyped {kind}: {str(exc)[:200]!r}"


@dataclass
class Outcome:
    case: Case
    kind: str
    problems: list[str]
    names_input: bool = False
    changes: list[str] = field(default_factory=list)
    bare_airflow_fail: bool = False


@contextmanager
def quiet_airflow_logs() -> Iterator[None]:
    """Operators run outside a task runner warn once per call, and Airflow logs a traceback
    for a connection extra that is not JSON: expected here, and the corpus makes many."""
    import logging

    loggers = [logging.getLogger(n) for n in ("airflow.task", "airflow.sdk.definitions")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def run_case(item: Case, seed: Path, sid: str, cases_dir: Path) -> Outcome:
    root = cases_dir / item.name
    shutil.copytree(seed / "checkpoint", root / "checkpoint", symlinks=True)
    shutil.copytree(seed / "savepoints", root / "savepoints", symlinks=True)
    ctx = Ctx(root, sid)
    problems: list[str] = []
    raised: BaseException | None = None
    try:
        try:
            trial = item.prepare(ctx)
        except Exception as exc:  # noqa: BLE001 - a broken case must not hide the others
            return Outcome(item, "setup", [f"case setup failed: {exc!r}"[:300]])
        before = tree_state(root)
        try:
            trial.act()
        except Exception as exc:  # noqa: BLE001 - what it raises is what is being judged
            raised = exc
        after = tree_state(root)
    finally:
        ctx.restore_env()
    kind, problem = _classify(raised)
    if problem:
        problems.append(problem)
    names_input = raised is not None and trial.expect in str(raised)
    if raised is not None and not names_input:
        problems.append(f"message does not name {trial.expect!r}: {str(raised)[:200]!r}")
    changes = tree_changes(before, after)
    if changes:
        problems.append(f"{len(changes)} path(s) changed: {changes[:4]}")
    bare = kind == "airflow_fail" and raised is not None and not _project_error_in_chain(raised)
    return Outcome(item, kind, problems, names_input, changes, bare)


def make_seed(workdir: Path, seed: Path) -> str:
    """A checkpoint written by the stateless job (at least three batches) and a savepoint."""
    from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop
    from airflow_provider_kafkaspark.versions import SPARK_VERSION
    from kafkaspark_devstack.drivers import read_log, wait_exit
    from kafkaspark_devstack.kafka import LocalKafkaCluster

    kafka = LocalKafkaCluster(workdir / "kafka")
    kafka.start(timeout=180)
    try:
        bootstrap = kafka.bootstrap_servers
        stack.create_topics(bootstrap, {SOURCE: 1, SINK: 1})
        stack.produce_all(bootstrap, SOURCE, start=0, count=40, rate=400)
        checkpoint = seed / "checkpoint"
        spec = stack.passthrough_spec(
            bootstrap=bootstrap,
            checkpoint=checkpoint,
            source=SOURCE,
            sink=SINK,
            job_name=JOB,
            max_offsets_per_trigger=10,
            trigger_interval="availableNow",
        )
        # availableNow drains the 40 records in 10-record batches and exits by itself,
        # releasing its lease: no stop round trip before the savepoint.
        handle = stack.submit(spec, workdir / "drivers")
        code = wait_exit(handle, 300)
        if code is None:
            stack.kill(handle)
        batch = stack.committed(checkpoint)
        if code != 0 or batch < 2:
            raise RuntimeError(
                f"seed driver exited with {code} at batch {batch}:\n{read_log(handle)}"
            )
        manifest = savepoint_after_stop(
            str(checkpoint), str(seed / "savepoints"), JOB, spark_version=SPARK_VERSION
        )
    finally:
        kafka.stop()
    return manifest.savepoint_id


def run(profile: Profile, workdir: Path) -> ScenarioResult:
    result = ScenarioResult(name=NAME, title=TITLE)
    seed = workdir / "seed"
    started = time.monotonic()
    sid = make_seed(workdir, seed)
    result.checks["seed_seconds"] = round(time.monotonic() - started, 1)
    seed_before = tree_state(seed)
    stack.log(NAME, f"seed ready (savepoint {sid}); running {len(CASES)} cases")

    cases_started = time.monotonic()
    outcomes: list[Outcome] = []
    with quiet_airflow_logs():
        for item in CASES:
            outcome = run_case(item, seed, sid, workdir / "cases")
            outcomes.append(outcome)
            if outcome.problems:
                result.failures.append(f"{item.area}/{item.name}: " + "; ".join(outcome.problems))
                stack.log(NAME, f"FAIL {item.name}: {'; '.join(outcome.problems)}")

    result.checks["cases_seconds"] = round(time.monotonic() - cases_started, 1)
    per_area = Counter(o.case.area for o in outcomes)
    kinds = Counter(o.kind for o in outcomes)
    result.faults_injected = len(outcomes)
    result.records_checked = len(outcomes)
    result.checks["cases_per_area"] = {area: per_area[area] for area in AREAS}
    result.checks["error_kinds"] = dict(sorted(kinds.items()))
    result.checks["passed_cases"] = sum(1 for o in outcomes if not o.problems)
    result.checks["untyped_or_missing_error"] = [
        o.case.name for o in outcomes if o.kind in ("untyped", "none")
    ]
    result.checks["message_misses_input"] = [
        o.case.name for o in outcomes if o.kind not in ("none", "setup") and not o.names_input
    ]
    result.checks["tree_changed"] = [o.case.name for o in outcomes if o.changes]
    # Accepted, but listed: an operator failing on purpose without a package error behind it.
    result.checks["airflow_fail_without_package_error"] = [
        o.case.name for o in outcomes if o.bare_airflow_fail
    ]
    result.check(f"at_least_{MIN_CASES}_cases", len(outcomes) >= MIN_CASES, len(outcomes))
    result.check(
        "every_area_has_cases",
        all(per_area[a] >= 5 for a in AREAS),
        {area: per_area[area] for area in AREAS},
    )
    seed_changes = tree_changes(seed_before, tree_state(seed))
    result.check("seed_tree_unchanged", not seed_changes, seed_changes[:5])
    return result
