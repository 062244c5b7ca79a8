"""The source topic is deleted and recreated while the job is stopped.

The job reads BEFORE records, stops gracefully and is savepointed. While it is stopped the
source topic is deleted and recreated with as many partitions and far fewer records
(RECREATED), so every savepoint offset lies past the new end. What must hold:

- reconciliation reports OFFSET_ABOVE_LATEST for every partition, with the distance past
  the end figured here on its own from the savepoint's offsets and Kafka's end offsets;
- the restore (checkpoint mode, the operators' default, and offsets mode) raises the typed
  RestoreRefusedError, whose message names the topic and says why;
- a refused restore changes nothing: no file under the checkpoint or the savepoints folder
  changes, and no backup of the checkpoint is made.

Before the fault, the sink is checked to hold each record the job read exactly once.
"""

from __future__ import annotations

from pathlib import Path

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef
from airflow_provider_kafkaspark.core.health.observe import kafka_view
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.kafka.reconcile import (
    FindingKind,
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

NAME = "topic_recreated"
TITLE = "Topic deleted and recreated while stopped: offsets above the end, restore refused"

JOB = "rel-recreated"
SOURCE = "rel-recreated-in"
SINK = "rel-recreated-out"
PARTITIONS = 3
BEFORE = 1_500  # read by the job before it stops
RECREATED = 150  # in the recreated topic: every partition ends below the savepoint's offset
JOB_TIMEOUT_S = 300.0
KAFKA_TIMEOUT_S = 120.0


def run(profile: Profile, workdir: Path) -> ScenarioResult:
    result = ScenarioResult(name=NAME, title=TITLE)
    cluster = LocalKafkaCluster(workdir / "kafka")
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

        found = [v.decode() for v in stack.read_committed(bootstrap, SINK)]
        once = stack.OnceCount.of([str(v) for v in range(BEFORE)], found)
        result.records_checked = once.checked
        result.duplicates = once.duplicates
        result.missing = once.missing
        result.check("unexpected", once.unexpected == 0, once.unexpected)

        # The fault: the topic goes away and comes back, shorter, while the job is stopped.
        recreate_topic(bootstrap, SOURCE, PARTITIONS)
        result.faults_injected += 1
        stack.produce_all(bootstrap, SOURCE, start=BEFORE, count=RECREATED)
        marks = stack.log_marks(bootstrap, SOURCE, PARTITIONS)
        stack.log(NAME, f"{SOURCE} recreated with {RECREATED} records; (start, end) {marks}")

        # Figured independently of the project's reconcile code.
        expected_ahead = {p: saved[p] - marks[p][1] for p in saved}
        result.check(
            "all_partitions_past_end", all(n > 0 for n in expected_ahead.values()), expected_ahead
        )

        with KafkaFacade(kafka_config) as kafka:
            view = kafka_view(kafka, {SOURCE: saved}, spec.source.subscribe)
        plan = build_reconcile_plan({SOURCE: saved}, view)
        stack.log(NAME, plan.summary())
        above = {f.partition: f for f in plan.findings if f.kind is FindingKind.OFFSET_ABOVE_LATEST}
        reported = {p: f.figures.get("offsets_ahead") for p, f in above.items()}
        result.check("above_end_reported", reported == expected_ahead, reported)
        result.check(
            "above_end_critical",
            all(f.severity is Severity.CRITICAL for f in above.values()),
            sorted({f.severity.name for f in above.values()}),
        )
        # Observed, not claimed: the recreated topic's records are in no figure of the plan
        # (offsets past the end count as nothing waiting), though no restore of these
        # offsets would ever read them.
        result.checks["lag_reported"] = plan.total_lag_records

        for mode in ("checkpoint", "offsets"):
            before = stack.tree_digest(checkpoint, savepoints)
            error = try_restore(spec, savepoints, manifest.savepoint_id, kafka_config, mode)
            message = str(error) if error is not None else None
            stack.log(NAME, f"restore in {mode} mode: {message or 'proceeded'}")
            result.check(
                f"restore_refused_{mode}",
                isinstance(error, RestoreRefusedError),
                message if error is not None else "proceeded",
            )
            result.check(
                f"message_names_topic_{mode}",
                message is not None
                and repr(SOURCE) in message
                and FindingKind.OFFSET_ABOVE_LATEST.value in message
                and "past the end" in message,
                message,
            )
            result.check(
                f"tree_unchanged_{mode}", stack.tree_digest(checkpoint, savepoints) == before
            )
            result.check(
                f"no_backup_made_{mode}",
                not stack.backups(checkpoint),
                [p.name for p in stack.backups(checkpoint)],
            )
    finally:
        for handle in handles:
            if pid_alive(handle.pid):
                stack.kill(handle)
        cluster.stop()
    return result


def try_restore(
    spec: JobSpec, savepoints: Path, savepoint_id: str, kafka_config: dict[str, str], mode: str
) -> Exception | None:
    """The restore with the default policy: what it raised, or None if it proceeded."""
    try:
        restore_for_submit(
            spec,
            savepoint_root=str(savepoints),
            savepoint_ref=savepoint_id,
            mode=mode,
            kafka_config=kafka_config,
        )
    except Exception as exc:  # noqa: BLE001 - the type is what is checked
        return exc
    return None


# -- helpers (candidates for reliability/stack.py) ----------------------------------------


def recreate_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Delete `topic` and create it anew; creating fails while the deletion is in progress."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics([topic], operation_timeout=30).values():
        future.result(60)

    def create() -> str | None:
        """None once created; the retriable error while the deletion is in progress."""
        try:
            stack.create_topics(bootstrap, {topic: partitions})
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            retriable = isinstance(error, KafkaError) and error.code() in (
                KafkaError.TOPIC_ALREADY_EXISTS,
                KafkaError.UNKNOWN_TOPIC_OR_PART,
            )
            if not retriable:
                raise
            return str(error)
        return None

    stack.wait_for(
        f"Kafka to accept {topic} created anew (the last refusal shown)",
        create,
        KAFKA_TIMEOUT_S,
        done=lambda refusal: refusal is None,
    )
    stack.wait_for(
        f"{topic} to be recreated with {partitions} partitions (partitions shown)",
        lambda: stack.partition_count(bootstrap, topic),
        KAFKA_TIMEOUT_S,
        done=lambda seen: seen == partitions,
    )
