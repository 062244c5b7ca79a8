"""Retention overtakes a stopped job (tiny retention on a test topic).

The job reads BEFORE records, stops gracefully and is savepointed. While it is stopped, LOST
more records arrive and a tiny `retention.ms` deletes every one of them before anyone read
them; retention is then reset and AFTER records arrive. What must hold:

- reconciliation counts exactly the unread records retention deleted, figured here on its
  own from the savepoint's offsets and Kafka's log start offsets (and from what was produced);
- a restore with the default policy does what that policy says about the finding (records
  lost to retention are CRITICAL while failOnDataLoss holds, and the default blocks at
  CRITICAL: refused), and a refused restore changes no file;
- a restore of the job with failOnDataLoss=false proceeds (the restore's policy follows the
  option, as Spark does), and the restarted job writes every record the topic still has
  after the savepoint once: the sink holds BEFORE and AFTER once each; the LOST ones are
  counted as lost, not as missing.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from pathlib import Path

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef
from airflow_provider_kafkaspark.core.health.observe import kafka_view
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.kafka.reconcile import (
    FindingKind,
    ReconcilePlan,
    Severity,
    build_reconcile_plan,
)
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.lifecycle.errors import RestoreRefusedError
from airflow_provider_kafkaspark.lifecycle.restore import restore_for_submit
from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop
from airflow_provider_kafkaspark.versions import SPARK_VERSION
from kafkaspark_devstack.kafka import LocalKafkaCluster
from reliability import stack
from reliability.model import Profile, ScenarioResult

NAME = "retention_overtakes"
TITLE = "Retention overtakes a stopped job: the loss is counted, the restore follows its policy"

JOB = "rel-retention"
SOURCE = "rel-retention-in"
SINK = "rel-retention-out"
PARTITIONS = 2
BEFORE = 1_000  # read by the job before it stops
LOST = 1_000  # produced while it is stopped, then deleted by retention unread
AFTER = 1_000  # produced once retention is reset: what the restored job must read
TINY_RETENTION_MS = "100"
JOB_TIMEOUT_S = 300.0
KAFKA_TIMEOUT_S = 120.0
# The AFTER records are stamped this far ahead: the broker applies a dropped retention.ms to
# its log a moment after it reports the topic's config without it, and records stamped
# "now" could still meet the tiny retention then. Stamped ahead, no retention check deletes
# them however late the log learns of the reset (Kafka accepts stamps up to an hour ahead
# by default: log.message.timestamp.after.max.ms).
AFTER_STAMP_AHEAD_MS = 30 * 60 * 1000

BROKER_CONFIG = {
    # Retention is checked every second instead of every 5 minutes, from the start (the
    # first check otherwise waits 30 s).
    "log.retention.check.interval.ms": "1000",
    "log.initial.task.delay.ms": "0",
    # Deleted segments' files go at once; only the log start offset matters here, but
    # lingering files would keep disk use up on a shared machine.
    "log.segment.delete.delay.ms": "0",
}


def run(profile: Profile, workdir: Path) -> ScenarioResult:
    result = ScenarioResult(name=NAME, title=TITLE)
    cluster = LocalKafkaCluster(workdir / "kafka", broker_config=BROKER_CONFIG)
    handles: list[LocalJobRef] = []
    checkpoint = workdir / "checkpoint"
    savepoints = workdir / "savepoints"
    try:
        stack.log(NAME, "starting a 1-node Kafka cluster")
        cluster.start()
        bootstrap = cluster.bootstrap_servers
        kafka_config = {"bootstrap.servers": bootstrap}
        stack.create_topics(bootstrap, {SOURCE: PARTITIONS, SINK: PARTITIONS})
        spec = stack.passthrough_spec(
            bootstrap=bootstrap, checkpoint=checkpoint, source=SOURCE, sink=SINK, job_name=JOB
        )

        stack.produce_all(bootstrap, SOURCE, start=0, count=BEFORE)
        stack.log(NAME, f"{BEFORE} records produced; starting the job")
        handles.append(stack.submit(spec, workdir / "jobs"))
        stack.wait_caught_up(handles[-1], checkpoint, bootstrap, [SOURCE], JOB_TIMEOUT_S)
        batch = stack.stop(handles[-1], NAME)
        manifest = savepoint_after_stop(
            str(checkpoint), str(savepoints), JOB, spark_version=SPARK_VERSION
        )
        saved = {int(p): o for p, o in manifest.offsets[SOURCE].items()}
        stack.log(NAME, f"stopped at batch {batch}; savepoint {manifest.savepoint_id} at {saved}")
        result.check("savepoint_at_end", sum(saved.values()) == BEFORE, saved)

        # The fault: records arrive while the job is stopped and age out before it returns.
        stack.produce_all(bootstrap, SOURCE, start=BEFORE, count=LOST)
        set_retention(bootstrap, TINY_RETENTION_MS)
        result.faults_injected += 1
        stack.log(NAME, f"{LOST} records produced while stopped; retention.ms={TINY_RETENTION_MS}")
        stack.wait_for(
            "retention to delete every record of the source topic ((start, end) shown)",
            lambda: stack.log_marks(bootstrap, SOURCE, PARTITIONS),
            KAFKA_TIMEOUT_S,
            done=lambda marks: all(low == high for low, high in marks.values()),
        )
        set_retention(bootstrap, None)
        wait_retention_reset(bootstrap)
        stack.produce_all(
            bootstrap,
            SOURCE,
            start=BEFORE + LOST,
            count=AFTER,
            timestamp_ms=int(time.time() * 1000) + AFTER_STAMP_AHEAD_MS,
        )
        marks = stack.log_marks(bootstrap, SOURCE, PARTITIONS)
        stack.log(NAME, f"retention reset, {AFTER} more records; (start, end) now {marks}")

        # Figured independently of the project's reconcile code: the unread records the
        # log start offset has passed.
        expected_lost = {p: max(0, marks[p][0] - saved[p]) for p in saved}
        result.check("lost_expected", sum(expected_lost.values()) == LOST, expected_lost)

        with KafkaFacade(kafka_config) as kafka:
            view = kafka_view(kafka, {SOURCE: saved}, spec.source.subscribe)
        plan = build_reconcile_plan({SOURCE: saved}, view)
        stack.log(NAME, plan.summary())
        check_plan(result, plan, expected_lost, marks)

        # The default policy, read from the code rather than restated here.
        default_block_on = inspect.signature(restore_for_submit).parameters["block_on"].default
        expect_refusal = plan.blocking(default_block_on)
        result.check("default_policy_blocks", expect_refusal, default_block_on.name)
        before = stack.tree_digest(checkpoint, savepoints)
        refused = try_restore(spec, savepoints, manifest.savepoint_id, kafka_config)
        stack.log(NAME, f"default restore: {refused or 'proceeded'}")
        result.check("restore_refused", (refused is not None) == expect_refusal, refused)
        result.check(
            "message_names_topic",
            refused is not None
            and repr(SOURCE) in refused
            and FindingKind.OFFSET_BELOW_EARLIEST.value in refused
            and "lost to retention" in refused,
            refused,
        )
        result.check("tree_unchanged", stack.tree_digest(checkpoint, savepoints) == before)
        result.check(
            "no_backup_made",
            not stack.backups(checkpoint),
            [p.name for p in stack.backups(checkpoint)],
        )

        # A job that accepts the loss (failOnDataLoss=false, as in Spark) is restored: the
        # restore's reconcile policy follows the job's option.
        lossy = dataclasses.replace(
            spec, source=dataclasses.replace(spec.source, fail_on_data_loss=False)
        )
        restored, summary = restore_for_submit(
            lossy,
            savepoint_root=str(savepoints),
            savepoint_ref=manifest.savepoint_id,
            mode="checkpoint",
            kafka_config=kafka_config,
        )
        stack.log(NAME, f"restore of the job that accepts loss: {summary}")
        result.check(
            "restore_proceeds_when_job_accepts_loss",
            summary.get("savepoint_id") == manifest.savepoint_id and "backup" in summary,
            {k: v for k, v in summary.items() if k != "reconcile"},
        )

        handles.append(stack.submit(restored, workdir / "jobs"))
        result.restarts += 1
        stack.wait_caught_up(handles[-1], checkpoint, bootstrap, [SOURCE], JOB_TIMEOUT_S)
        stack.stop(handles[-1], NAME)
        result.check(
            "log_start_stable",
            stack.log_marks(bootstrap, SOURCE, PARTITIONS) == marks,
            stack.log_marks(bootstrap, SOURCE, PARTITIONS),
        )

        found = [v.decode() for v in stack.read_committed(bootstrap, SINK)]
        lost_values = {str(v) for v in range(BEFORE, BEFORE + LOST)}
        expected = [str(v) for v in range(BEFORE)]
        expected += [str(v) for v in range(BEFORE + LOST, BEFORE + LOST + AFTER)]
        once = stack.OnceCount.of(expected, found)
        result.records_checked = once.checked
        result.duplicates = once.duplicates
        result.missing = once.missing
        result.checks["lost"] = len(lost_values)
        result.check("lost_not_in_sink", not lost_values.intersection(found))
        result.check("unexpected", once.unexpected == 0, once.unexpected)
        stack.log(
            NAME,
            f"sink: {len(found)} records; {once.checked} expected, {once.duplicates} "
            f"duplicates, {once.missing} missing, {once.unexpected} unexpected, "
            f"{len(lost_values)} lost to retention",
        )
    finally:
        for handle in handles:
            if pid_alive(handle.pid):
                stack.kill(handle)
        cluster.stop()
    return result


def check_plan(
    result: ScenarioResult, plan: ReconcilePlan, expected_lost: dict[int, int], marks: stack.Marks
) -> None:
    below = {f.partition: f for f in plan.findings if f.kind is FindingKind.OFFSET_BELOW_EARLIEST}
    reported = {p: f.figures.get("records_lost") for p, f in below.items()}
    result.check(
        "lost_reported",
        plan.records_lost_total == sum(expected_lost.values()),
        plan.records_lost_total,
    )
    result.check(
        "lost_per_partition",
        reported == {p: n for p, n in expected_lost.items() if n > 0},
        reported,
    )
    result.check(
        "lost_severity",
        all(f.severity is Severity.CRITICAL for f in below.values()),
        sorted({f.severity.name for f in below.values()}),
    )
    # What the restored job will read: all Kafka still has, since it starts below the log start.
    waiting = sum(high - low for low, high in marks.values())
    result.check("lag_reported", plan.total_lag_records == waiting == AFTER, plan.total_lag_records)


def try_restore(
    spec: JobSpec, savepoints: Path, savepoint_id: str, kafka_config: dict[str, str]
) -> str | None:
    """The restore with the default policy: the refusal's message, or None if it proceeded."""
    try:
        restore_for_submit(
            spec,
            savepoint_root=str(savepoints),
            savepoint_ref=savepoint_id,
            mode="checkpoint",
            kafka_config=kafka_config,
        )
    except RestoreRefusedError as exc:
        return str(exc)
    return None


# -- helpers (candidates for reliability/stack.py) ----------------------------------------


def set_retention(bootstrap: str, retention_ms: str | None, topic: str = SOURCE) -> None:
    """Set the topic's `retention.ms`, or drop the override (None: the broker's, unlimited)."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )

    operation = AlterConfigOpType.SET if retention_ms is not None else AlterConfigOpType.DELETE
    entry = ConfigEntry("retention.ms", retention_ms, incremental_operation=operation)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[entry])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(60)


def wait_retention_reset(bootstrap: str, topic: str = SOURCE) -> None:
    """Until the topic no longer has its own retention.ms (the records produced next are
    stamped ahead so that the log applying the reset a moment later does not matter)."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

    admin = AdminClient({"bootstrap.servers": bootstrap})

    def retention() -> tuple[str | None, str]:
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
        for future in admin.describe_configs([resource]).values():
            entry = future.result(60)["retention.ms"]
            return entry.value, ConfigSource(entry.source).name
        return None, "not described"

    stack.wait_for(
        f"{topic} to drop its retention.ms (value, source shown)",
        retention,
        KAFKA_TIMEOUT_S,
        done=lambda seen: seen[1] != ConfigSource.DYNAMIC_TOPIC_CONFIG.name,
    )
