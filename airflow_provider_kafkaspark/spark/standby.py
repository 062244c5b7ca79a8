"""A standby driver: warm before the driver it replaces stops, started at once after.

A restart window's downtime was mostly a new driver's start: the JVM and Spark session, the
Kafka connector's classes, the plan's code generation, the Python workers and their imports,
each paid after the old driver had stopped. A standby (`handover.submit_standby`) pays them
while the old driver still runs: it builds its session, runs the job's transformation over the
last record of each input partition into Spark's `noop` sink, and starts as many Python
workers as tasks can run at once, each importing what the exactly-once sink's tasks import.
It touches neither the checkpoint nor the sink's topic (a transactional producer would fence
the old driver's); it only says it is ready (`standby-ready.json` in the control folder). It
then waits for the handover (`core/control/requests.Handover`) that names its token, written by the
restore once the checkpoint is ready, and only then takes the lease as any driver does: the
lease still allows one running query per checkpoint.

Spark closes Python workers idle for a minute, so a standby that waits longer starts them
again every `KEEP_WARM_S`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.control.reports import StandbyReady
from airflow_provider_kafkaspark.errors import InvalidInputError, KafkaSparkError
from airflow_provider_kafkaspark.spark.query import add_python_path, load_transformation

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from pyspark.sql import DataFrame, SparkSession

    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

log = logging.getLogger("kafkaspark.standby")

HANDOVER_POLL_S = 0.1
KEEP_WARM_S = 30.0


def run_standby(spark: SparkSession, spec: JobSpec) -> bool:
    """Warm up, then wait for the handover naming `spec.standby_token`; False when none came
    within `spec.standby_timeout_s` (the runner then exits without touching the checkpoint)."""
    assert spec.standby_token is not None
    try:
        add_python_path(spark, spec)
        transformation = load_transformation(spec)
    except InvalidInputError as exc:
        # Reported as a bad job when the query starts, after the handover, as without a
        # standby: the restart window's rollback handles it.
        log.warning("standby %s: the job's code is not loadable: %s", spec.standby_token, exc)
        transformation = None
    seconds = warm_up(spark, spec, transformation)
    log.info("standby %s warmed up: %s", spec.standby_token, seconds)
    checkpoint, timeout_s = spec.checkpoint_location, spec.standby_timeout_s
    if await_handover(spark, checkpoint, spec.standby_token, timeout_s, seconds):
        return True
    log.error(
        "standby %s: no handover within %.0fs; exiting without touching the checkpoint",
        spec.standby_token,
        timeout_s,
    )
    return False


def warm_up(
    spark: SparkSession,
    spec: JobSpec,
    transformation: Callable[[DataFrame], DataFrame] | None,
) -> dict[str, float]:
    """Do a first batch's start-up work without the checkpoint or the sink; returns the
    seconds of each step. A step that fails is logged and skipped: warming is an optimisation,
    and the real start reports the job's own errors."""
    seconds: dict[str, float] = {}
    began = time.monotonic()
    if transformation is not None:
        try:
            frame = _last_records(spark, spec)
            if frame is not None:
                transformation(frame).write.format("noop").mode("overwrite").save()
                seconds["source_and_transformation"] = round(time.monotonic() - began, 3)
        except Exception as exc:  # noqa: BLE001 - best effort, see above
            log.warning("warm-up of the source and transformation skipped: %s", exc)
    seconds["python_workers"] = start_python_workers(spark)
    return seconds


def start_python_workers(spark: SparkSession) -> float:
    """Start as many Python workers as tasks run at once, each with the sink's imports."""
    began = time.monotonic()
    slots = max(1, spark.sparkContext.defaultParallelism)
    try:
        spark.range(0, slots, 1, slots).mapInArrow(_import_sink_modules, "ready int").collect()
    except Exception as exc:  # noqa: BLE001 - best effort
        log.warning("warm-up of the Python workers skipped: %s", exc)
    return round(time.monotonic() - began, 3)


def _import_sink_modules(batches: Iterable[Any]) -> Iterator[Any]:
    # Runs in a Python worker: the imports the exactly-once sink's first task would pay.
    import confluent_kafka  # noqa: F401
    import pyarrow as pa

    import airflow_provider_kafkaspark.spark.sink  # noqa: F401

    for _ in batches:
        pass
    yield pa.RecordBatch.from_arrays([pa.array([1], pa.int32())], names=["ready"])


def _last_records(spark: SparkSession, spec: JobSpec) -> DataFrame | None:
    """A batch read of the last record of each partition of the job's topics (None for a
    pattern subscription, whose topics the standby does not look up)."""
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.core.kafka.offsets import (
        TopicPartition,
        format_kafka_offsets,
        nest,
    )
    from airflow_provider_kafkaspark.spark.query import source_frame

    if spec.source.assign:
        partitions = [TopicPartition(t, p) for t, ps in spec.source.assign.items() for p in ps]
    elif spec.source.subscribe:
        partitions = []
    else:
        return None
    with KafkaFacade(spec.admin_config()) as kafka:
        if not partitions:
            counts = kafka.topic_partitions(spec.source.subscribe)
            partitions = [TopicPartition(t, p) for t, n in counts.items() for p in range(n)]
        marks = kafka.watermarks(partitions)
    start = nest((tp, max(mark.low, mark.high - 1)) for tp, mark in marks.items())
    end = nest((tp, mark.high) for tp, mark in marks.items())
    source = dataclasses.replace(
        spec.source,
        starting_offsets=format_kafka_offsets(start),
        ending_offsets=format_kafka_offsets(end),
    )
    return source_frame(spark, dataclasses.replace(spec, source=source), streaming=False)


def await_handover(
    spark: SparkSession,
    checkpoint: str,
    token: str,
    timeout_s: float,
    warm_up_s: dict[str, float],
) -> bool:
    """Say the standby is ready, then wait for the handover naming `token`; False when
    `timeout_s` passed without one. The ready file is the one thing a standby writes before
    its handover: the running driver never reads it."""
    control = ControlFolder(checkpoint)
    control.write_standby_ready(StandbyReady(token, now_ms(), warm_up_s))
    deadline = time.monotonic() + timeout_s
    next_warm = time.monotonic() + KEEP_WARM_S
    log.info("standby ready: waiting up to %.0fs for the handover of %s", timeout_s, checkpoint)
    while time.monotonic() < deadline:
        try:
            handover = control.read_handover()
        except KafkaSparkError as exc:
            log.warning("unreadable handover, ignored: %s", exc)
            handover = None
        if handover is not None and handover.token == token:
            log.info("handed over by %s", handover.handed_over_by)
            return True
        if time.monotonic() >= next_warm:
            start_python_workers(spark)
            next_warm = time.monotonic() + KEEP_WARM_S
        time.sleep(HANDOVER_POLL_S)
    return False
