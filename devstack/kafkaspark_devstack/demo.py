"""The README demo: the whole story on a real local stack (Kafka, Spark, Airflow 3).

1. start a local Kafka broker (KRaft) and an Airflow home on SQLite; seeded web access events
   (three minutes of event time) start to flow in;
2. deploy: `airflow dags test kafkaspark_deploy` deploys the example job (requests per IP per
   5-second window, exactly-once Kafka sink): a submit, then its health gate;
3. restart window: `kafkaspark_restart_window` upgrades the deployment (compatibility check,
   stop with a savepoint, restore, health gate); while the job is down a partition is added
   to the source topic;
4. maintenance: the job is stopped, another partition is added and a topic the reconcile DAG
   watches is deleted; `kafkaspark_reconcile` reports both (NEW_PARTITION, TOPIC_MISSING);
   `kafkaspark_deploy` brings the job back, and it reads the new partition from its start;
5. backfill: `kafkaspark_backfill` recomputes three one-minute intervals as bounded batch
   jobs, which must give the same per-window counts as the streaming job;
6. the job is stopped (savepoint again) and a `read_committed` reader checks every window
   against the counts the input implies: duplicates and missing windows, both 0.

Run with `make demo` (sets everything up first) or
`python -m kafkaspark_devstack.demo`; `--storage s3` (`make demo-s3`) keeps
the checkpoint and the savepoints on a local S3 server.
Everything lives in a temporary folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.examples.access_events import (
    AccessEvent,
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.examples.ip_count import expected_counts
from kafkaspark_devstack.jars import use_default_jars_dir

ROOT = Path(__file__).resolve().parents[2]
DAGS = ROOT / "dags"
JOB = "ip_count"
SOURCE, SINK, AUDIT = "ip_count_source", "ip_count_sink", "ip_count_audit"
WATERMARK_MS = 10_000
DEMO_BUCKET = "kafkaspark-demo"
# The backfill DAG's first interval starts here (2023-11-14T22:14Z); the demo's events cover
# its three one-minute intervals.
MINUTE0_MS = 1_700_000_040_000
BACKFILL_DATES = (
    "2023-11-14T22:15:00+00:00",
    "2023-11-14T22:16:00+00:00",
    "2023-11-14T22:17:00+00:00",
)


def _say(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def airflow_env(
    workdir: Path, bootstrap: str, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """Environment for `airflow` commands: a SQLite home in `workdir`, this repository's DAGs,
    the Kafka connection, and the example DAGs' settings (examples/dag_settings.py)."""
    return {
        **os.environ,
        "AIRFLOW_HOME": str(workdir / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps(
            {"conn_type": "kafka", "extra": {"bootstrap.servers": bootstrap, **(extra or {})}}
        ),
        "KAFKASPARK_HOME": str(workdir / "home"),
        "KAFKASPARK_JOB_NAME": JOB,
        "KAFKASPARK_SOURCE_TOPIC": SOURCE,
        "KAFKASPARK_SINK_TOPIC": SINK,
        "KAFKASPARK_RECONCILE_TOPICS": AUDIT,
    }


# How often a running `airflow` command gets a progress line.
PROGRESS_EVERY_S = 10.0


def airflow(
    env: dict[str, str],
    *args: str,
    timeout: float = 900,
    progress: Callable[[], str] | None = None,
) -> str:
    """Run an `airflow` command; returns its output, raises with the tail if it fails.
    While it runs, `progress()` is printed every `PROGRESS_EVERY_S` seconds."""
    command = [str(Path(sys.executable).parent / "airflow"), *args]
    started = time.monotonic()
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        while True:
            try:
                # A timed-out communicate() keeps what was read; the next call goes on.
                stdout, stderr = proc.communicate(timeout=PROGRESS_EVERY_S)
                break
            except subprocess.TimeoutExpired:
                waited = time.monotonic() - started
                if waited > timeout:
                    proc.kill()
                    stdout, stderr = proc.communicate()
                    raise RuntimeError(
                        f"`airflow {' '.join(args)}` gave no result within {timeout:g}s:\n"
                        f"{(stdout + stderr)[-6000:]}"
                    ) from None
                if progress is not None:
                    _say(f"  ... {waited:.0f}s: {progress()}")
    output = stdout + stderr
    if proc.returncode != 0:
        raise RuntimeError(f"`airflow {' '.join(args)}` failed:\n{output[-6000:]}")
    return output


def job_progress(checkpoint: str) -> str:
    """One line about the job: its latest committed batch, the records it has read, and
    whether a driver holds the lease."""
    from airflow_provider_kafkaspark.core.control.folder import ControlFolder
    from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
    from airflow_provider_kafkaspark.errors import KafkaSparkError

    try:
        reader = CheckpointReader(checkpoint)
        lease = ControlFolder(checkpoint).live_lease()
        driver = f"driver pid {lease.pid} running" if lease is not None else "no driver running"
        if not reader.exists():
            return f"checkpoint not written yet, {driver}"
        position = reader.position()
        records = sum(
            o for offsets in position.committed_offsets.values() for o in offsets.values()
        )
        if position.latest_committed is None:
            return f"no batch committed yet, {driver}"
        return f"batch {position.latest_committed} committed, {records} records read, {driver}"
    except KafkaSparkError as exc:
        return f"checkpoint not readable right now ({exc})"


OutputSeen = Callable[[str, str], None]


def dags_test(
    env: dict[str, str],
    dag_id: str,
    logical_date: str | None = None,
    on_output: OutputSeen | None = None,
    checkpoint: str | None = None,
) -> str:
    """`airflow dags test`; `on_output(dag_id, output)` sees what it printed, which is also
    kept as `<AIRFLOW_HOME>/logs/dags-test/<n>-<dag_id>.log` (the task logs of a `dags test`
    go to its output only). With `checkpoint`, a progress line about the job every few
    seconds."""
    _say(f"airflow dags test {dag_id}{' ' + logical_date if logical_date else ''}")
    progress = (lambda: job_progress(checkpoint)) if checkpoint else None
    output = airflow(
        env, "dags", "test", dag_id, *([logical_date] if logical_date else []), progress=progress
    )
    kept = Path(env["AIRFLOW_HOME"]) / "logs" / "dags-test"
    kept.mkdir(parents=True, exist_ok=True)
    (kept / f"{len(list(kept.iterdir())) + 1:02d}-{dag_id}.log").write_text(output)
    if on_output is not None:
        on_output(dag_id, output)
    return output


def reconcile_findings(env: dict[str, str]) -> dict[str, int]:
    """Findings by kind in the plan the reconcile DAG's last run returned (XCom, SQLite)."""
    import sqlite3

    with sqlite3.connect(Path(env["AIRFLOW_HOME"]) / "airflow.db") as db:
        row = db.execute(
            "SELECT value FROM xcom WHERE dag_id = 'kafkaspark_reconcile' "
            "AND key = 'return_value' ORDER BY timestamp DESC LIMIT 1"
        ).fetchone()
    if row is None:
        raise RuntimeError("the reconcile DAG returned no plan")
    raw = row[0].decode() if isinstance(row[0], bytes) else row[0]
    plan = json.loads(raw)
    return dict(Counter(str(f["kind"]) for f in plan["findings"]))


def read_sink(bootstrap: str, topic: str, partitions: int) -> list[dict[str, Any]]:
    """Every committed record of the sink topic (read_committed, up to partition EOF)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kafkaspark-demo-reader",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    rows: list[dict[str, Any]] = []
    at_end: set[int | None] = set()
    deadline = time.monotonic() + 120
    try:
        while len(at_end) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                continue
            rows.append(json.loads(msg.value() or b"{}"))
    finally:
        consumer.close()
    return rows


def _trickle(bootstrap: str, events: list[AccessEvent], chunks: int, pause_s: float) -> None:
    """Events arrive while the DAGs run, as in production: health needs new batches."""
    size = -(-len(events) // chunks)
    for start in range(0, len(events), size):
        produce_events(bootstrap, SOURCE, events[start : start + size])
        time.sleep(pause_s)


def _during_window(bootstrap: str, checkpoint: str, since_ms: int, done: list[str]) -> None:
    """Once the window's stop has left its stopped report: add a source partition while the
    job is down (the restore's reconciliation then finds it, and the job reads it)."""
    from confluent_kafka.admin import AdminClient, NewPartitions

    from airflow_provider_kafkaspark.core.control.folder import ControlFolder

    control = ControlFolder(checkpoint)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        stopped = control.read_stopped()
        if stopped is not None and stopped.stopped_at_ms >= since_ms:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_partitions([NewPartitions(SOURCE, 4)])[SOURCE].result(60)
            done.append("partition 3 added while the job was down")
            return
        time.sleep(0.2)


def _wait_caught_up(bootstrap: str, checkpoint: str, timeout_s: float = 600) -> None:
    from airflow_provider_kafkaspark.core.health.observe import caught_up, end_offsets
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader

    with KafkaFacade({"bootstrap.servers": bootstrap}) as kafka:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                position = CheckpointReader(checkpoint).position()
                if caught_up(position, end_offsets(kafka, [SOURCE])):
                    return
            except Exception:  # noqa: BLE001 - not written yet
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the job did not catch up in time")
            time.sleep(1)


def _window_counts(
    rows: list[dict[str, Any]],
) -> tuple[Counter[tuple[int, str]], dict[tuple[int, str], int]]:
    seen: Counter[tuple[int, str]] = Counter()
    got: dict[tuple[int, str], int] = {}
    for row in rows:
        key = (int(row["window_start_ms"]), str(row["ip"]))
        seen[key] += 1
        got[key] = int(row["count"])
    return seen, got


def _wrong_windows(
    expected: Counter[tuple[int, str]], got: dict[tuple[int, str], int], limit: int = 20
) -> list[dict[str, Any]]:
    """Up to `limit` windows whose written count (None: not written) is not the expected
    one, by window start, with the seconds after the first event they start at."""
    keys = sorted(k for k in set(expected) | set(got) if got.get(k) != expected.get(k))
    return [
        {
            "window_start_ms": start,
            "seconds_in": (start - MINUTE0_MS) / 1000,
            "ip": ip,
            "expected": expected.get((start, ip)),
            "written": got.get((start, ip)),
        }
        for start, ip in keys[:limit]
    ]


def backfill_counts(output_root: Path) -> Counter[tuple[int, str]]:
    """Per-window counts of the backfill's Parquet output, all intervals together."""
    import pyarrow.parquet as pq

    counts: Counter[tuple[int, str]] = Counter()
    if not output_root.exists():
        return counts
    for row in pq.read_table(str(output_root)).to_pylist():
        value = json.loads(row["value"])
        counts[(int(value["window_start_ms"]), str(value["ip"]))] += int(value["count"])
    return counts


def run(
    events: int,
    workdir: Path,
    connection_extra: dict[str, str] | None = None,
    on_output: OutputSeen | None = None,
    storage: str = "local",
) -> dict[str, Any]:
    """The whole story in `workdir` (kept: Airflow's database and task logs are there).

    `connection_extra`: more settings for the Kafka connection's extra (tests put a secret
    there); `on_output(dag_id, output)` sees every `airflow dags test` output. `storage="s3"`
    keeps the checkpoint and the savepoints on a local S3 server, reached by the DAGs through
    an `aws` connection and by the demo itself through the same credentials."""
    with contextlib.ExitStack() as stack:
        state: dict[str, str] = {}
        if storage == "s3":
            state = stack.enter_context(_demo_s3(workdir))
        elif storage != "local":
            raise ValueError(f"storage must be 'local' or 's3', got {storage!r}")
        return _run(events, workdir, connection_extra, on_output, state)


@contextlib.contextmanager
def _demo_s3(workdir: Path) -> Iterator[dict[str, str]]:
    """A local S3 server for the demo's state; yields the DAGs' extra settings."""
    from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
    from kafkaspark_devstack.s3 import LocalS3Server

    _say("starting a local S3 server (SeaweedFS) for checkpoints and savepoints")
    with LocalS3Server(workdir / "s3") as server:
        server.create_bucket(DEMO_BUCKET)
        connection = server.aws_connection()
        with s3_options_scope(server.storage_options()):
            yield {
                "KAFKASPARK_STATE_URL": f"s3://{DEMO_BUCKET}/state",
                "KAFKASPARK_AWS_CONN_ID": "kafkaspark_s3",
                "AIRFLOW_CONN_KAFKASPARK_S3": json.dumps(connection),
            }


def _thread(target: Callable[..., Any], *args: Any) -> threading.Thread:
    """A daemon thread in a copy of this context (the demo's S3 credentials scope)."""
    context = contextvars.copy_context()
    return threading.Thread(target=context.run, args=(target, *args), daemon=True)


def _run(
    events: int,
    workdir: Path,
    connection_extra: dict[str, str] | None,
    on_output: OutputSeen | None,
    state: dict[str, str],
) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, NewPartitions

    from airflow_provider_kafkaspark.core.control.lease import now_ms
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
    from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore
    from airflow_provider_kafkaspark.examples.dag_settings import ExampleSettings
    from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop, stop_job
    from airflow_provider_kafkaspark.versions import SPARK_VERSION
    from kafkaspark_devstack.kafka import LocalKafkaCluster

    settings = ExampleSettings(
        str(workdir / "home"),
        JOB,
        SOURCE,
        SINK,
        (AUDIT,),
        state_url=state.get("KAFKASPARK_STATE_URL"),
        aws_conn_id=state.get("KAFKASPARK_AWS_CONN_ID"),
    )
    _say("starting a local Kafka broker (KRaft mode)")
    with LocalKafkaCluster(workdir / "kafka") as cluster:
        bootstrap = cluster.bootstrap_servers
        _say(f"Kafka is up at {bootstrap}")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for topic, partitions in ((SOURCE, 3), (SINK, 3), (AUDIT, 1)):
            cluster.create_topic(topic, partitions)
        env = {**airflow_env(workdir, bootstrap, connection_extra), **state}
        _say("preparing an Airflow home on SQLite (airflow db migrate)")
        airflow(env, "db", "migrate", timeout=300)

        input_events = list(
            generate_events(events, start_ms=MINUTE0_MS, events_per_second=max(1, events // 180))
        )
        first, second = (
            input_events[: len(input_events) // 2],
            input_events[len(input_events) // 2 :],
        )
        trickle = _thread(_trickle, bootstrap, first, 40, 1.0)
        trickle.start()
        try:
            dags_test(env, "kafkaspark_deploy", on_output=on_output, checkpoint=settings.checkpoint)
            _say("deployed and healthy")
            window_events: list[str] = []
            watcher = _thread(
                _during_window, bootstrap, settings.checkpoint, now_ms(), window_events
            )
            watcher.start()
            dags_test(
                env,
                "kafkaspark_restart_window",
                on_output=on_output,
                checkpoint=settings.checkpoint,
            )
            watcher.join(5)
            _say(f"restart window done ({'; '.join(window_events) or 'nothing changed'})")
            trickle.join(600)
            produced = len(first)
            # Maintenance: the job is stopped; a partition is added and a watched topic
            # deleted while it is down; the reconcile DAG reports both before it is back.
            stop_job(
                settings.checkpoint, requested_by="demo", reason="maintenance", drain_timeout_s=120
            )
            admin.create_partitions([NewPartitions(SOURCE, 5)])[SOURCE].result(60)
            admin.delete_topics([AUDIT])[AUDIT].result(60)
            time.sleep(2)
            produced += produce_events(bootstrap, SOURCE, second)
            _say(f"stopped for maintenance: partition 4 added, {AUDIT} deleted; {produced} events")
            dags_test(
                env, "kafkaspark_reconcile", on_output=on_output, checkpoint=settings.checkpoint
            )
            findings = reconcile_findings(env)
            _say(f"reconcile findings by kind (from the task's XCom): {findings}")
            dags_test(env, "kafkaspark_deploy", on_output=on_output, checkpoint=settings.checkpoint)
            _say("deployed again: the job reads the new partition from its first record")
            for date in BACKFILL_DATES:
                dags_test(env, "kafkaspark_backfill", date, on_output)
            flush_ms = max(e.event_time_ms for e in input_events) + 60_000
            # One far-future event moves the watermark past every window of the input.
            flush = AccessEvent("255.255.255.255", flush_ms, "/flush", 200)
            produced += produce_events(bootstrap, SOURCE, [flush])
            _wait_caught_up(bootstrap, settings.checkpoint)
        finally:
            stopped = stop_job(
                settings.checkpoint,
                requested_by="demo",
                reason="end of demo",
                drain_timeout_s=120,
                allow_force_kill=True,
            )
        if stopped is None or not stopped.clean:
            raise RuntimeError("the job did not stop cleanly at the end of the demo")
        final = savepoint_after_stop(
            settings.checkpoint, settings.savepoints, JOB, spark_version=SPARK_VERSION
        )
        _say(f"stopped after batch {stopped.last_committed_batch}; savepoint {final.savepoint_id}")
        rows = read_sink(bootstrap, SINK, 3)
        with KafkaFacade({"bootstrap.servers": bootstrap}) as kafka:
            lag_group = kafka.group_offsets(f"kafkaspark.{JOB}")
    seen, got = _window_counts(rows)
    expected = expected_counts(input_events, closed_before_ms=flush_ms - WATERMARK_MS)
    backfilled = backfill_counts(Path(settings.backfill_output))
    end_ms = MINUTE0_MS + 180_000
    streamed_in_range = {k: v for k, v in got.items() if MINUTE0_MS <= k[0] < end_ms}
    position = CheckpointReader(settings.checkpoint).position()
    return {
        "checkpoint": settings.checkpoint,
        "events_produced": produced,
        "batches": (position.latest_committed or 0) + 1,
        "source_partitions_at_end": len(position.committed_offsets.get(SOURCE, {})),
        "partition_added_during_window": bool(window_events),
        "partition_added_while_stopped": True,
        "savepoints": len(SavepointStore(settings.savepoints).list(JOB)),
        "reconcile_findings": findings,
        "windows_expected": len(expected),
        "windows_written": len(got),
        "records_counted": sum(got.values()),
        "duplicates": sum(n - 1 for n in seen.values()),
        "missing": len(set(expected) - set(got)),
        "wrong_counts": sum(1 for k, v in expected.items() if k in got and got[k] != v),
        # Where the output differs from the input, for a failure to be read from the summary.
        "wrong_windows": _wrong_windows(expected, got),
        # The job's lag consumer group (what kafka-consumer-groups shows) ends where the
        # checkpoint ends.
        "lag_group_matches_checkpoint": lag_group == position.committed_offsets,
        "backfill_windows": len(backfilled),
        "backfill_matches_streaming": bool(backfilled) and dict(backfilled) == streamed_in_range,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument(
        "--storage",
        choices=("local", "s3"),
        default=os.environ.get("KAFKASPARK_DEMO_STORAGE", "local"),
        help="where the checkpoint and savepoints live (s3: a local SeaweedFS server)",
    )
    args = parser.parse_args(argv)
    # The drivers, the Airflow processes and the servers it starts read their jars from here.
    use_default_jars_dir()
    with tempfile.TemporaryDirectory(prefix="kafkaspark-demo-") as tmp:
        summary = run(args.events, Path(tmp), storage=args.storage)
    _say("summary: " + json.dumps(summary, indent=2))
    ok = (
        summary["duplicates"] == 0
        and summary["missing"] == 0
        and summary["wrong_counts"] == 0
        and summary["records_counted"] == args.events
        and summary["backfill_matches_streaming"]
    )
    if not ok:
        _say("the output does not match the input: see the summary above")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
