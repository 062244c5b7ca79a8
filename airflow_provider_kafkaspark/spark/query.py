"""The streaming query a job spec describes: the Kafka source, the job's transformation
(a `module:function` or SQL) and the sink, started under the spec's trigger and checkpoint.
The runner starts it; a standby reads the same source to warm up; a backfill reads it as a
batch.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.core.kafka.security import java_client_options
from airflow_provider_kafkaspark.core.spec.job_code import check_topics_exist
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.spark.object_storage import spark_url

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


def load_transformation(spec: JobSpec) -> Callable[[DataFrame], DataFrame]:
    """The spec's `module:function` or SQL over the view `source`; identity when neither."""
    if spec.transformation:
        module_name, func_name = spec.transformation.split(":")
        try:
            module = importlib.import_module(module_name)
            func = getattr(module, func_name)
        except Exception as exc:  # any failure of the author's module is theirs
            raise InvalidInputError(
                f"job spec field 'transformation': cannot load {spec.transformation} "
                f"({type(exc).__name__}: {exc}; driver sys.path starts {sys.path[:3]})"
            ) from exc
        if not callable(func):
            raise InvalidInputError(
                f"job spec field 'transformation': {spec.transformation} is not callable"
            )
        return func  # type: ignore[no-any-return]
    if spec.sql:
        sql = spec.sql

        def by_sql(source: DataFrame) -> DataFrame:
            source.createOrReplaceTempView("source")
            return source.sparkSession.sql(sql)

        return by_sql
    return lambda source: source


def transformed(
    spec: JobSpec, transform: Callable[[DataFrame], DataFrame], source: DataFrame
) -> DataFrame:
    """The query's plan: the author's function over the source. An exception it raises while
    the plan is built (before any data flows) is a bug of the job, the same on every attempt:
    a bad job, not a crash to restart. The JVM's own failures (py4j) stay crashes."""
    try:
        return transform(source)
    except Exception as exc:
        if type(exc).__module__.split(".")[0] == "py4j":
            raise
        what = spec.transformation or "sql"
        raise InvalidInputError(
            f"job spec field 'transformation': {what} failed while building the query "
            f"({type(exc).__name__}: {exc})"
        ) from exc


def source_frame(spark: SparkSession, spec: JobSpec, *, streaming: bool = True) -> DataFrame:
    reader: Any = spark.readStream if streaming else spark.read
    reader = reader.format("kafka")
    options = spec.source.spark_options()
    if streaming:
        options.pop("endingOffsets", None)
    else:
        options.pop("maxOffsetsPerTrigger", None)
    # The connection's settings, translated for the Java client (SASL credentials become a
    # JAAS line), win over the spec's options as before.
    options.update(java_client_options(spec.kafka_config, options))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()  # type: ignore[no-any-return]


def add_python_path(spark: SparkSession, spec: JobSpec) -> None:
    """The spec's `python_path` on this driver's sys.path, and its archives on the executors'.

    A submit ships local entries with the job under the names the spec gives: YARN puts them
    in the container's working folder, the local launcher in the driver's; SparkFiles is the
    last place looked. Files already in `--py-files` (`spark.submit.pyFiles`) reach the
    executors through spark-submit; the others go through addPyFile. A missing entry is a bad
    job (InvalidInputError), named by its field."""
    from pyspark import SparkFiles

    from airflow_provider_kafkaspark.core.spec.job_code import is_local, locate_python_path

    roots = [os.getcwd(), SparkFiles.getRootDirectory()]
    found = locate_python_path(spec.python_path, roots, os.path.exists)
    submitted = spark.sparkContext.getConf().get("spark.submit.pyFiles", "") or ""
    by_submit = {os.path.basename(p) for p in submitted.split(",") if p}
    for entry in reversed(found):
        if is_local(entry) and entry not in sys.path:
            sys.path.insert(0, entry)
        if os.path.isdir(entry) or os.path.basename(entry) in by_submit:
            continue
        spark.sparkContext.addPyFile(entry)


def start_query(
    spark: SparkSession,
    spec: JobSpec,
    on_bad_job: Callable[[BaseException], None] | None = None,
) -> StreamingQuery:
    check_topics_exist(spec)
    frame = transformed(spec, load_transformation(spec), source_frame(spark, spec))
    writer = frame.writeStream.queryName(spec.job_name).outputMode(spec.sink.output_mode)
    writer = writer.option("checkpointLocation", spark_url(spec.checkpoint_location))
    if spec.compat_check:
        return compat_check_writer(writer).start()  # type: ignore[no-any-return]
    if spec.trigger_interval == "availableNow":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=spec.trigger_interval)
    sink = spec.sink
    for key, value in sink.options.items():
        writer = writer.option(key, value)
    if sink.kind == "kafka_exactly_once":
        writer = writer.foreachBatch(exactly_once_batch_writer(spec, on_bad_job))
    elif sink.kind == "kafka":
        writer = writer.format("kafka").option("topic", sink.topic or "")
        writer = writer.option("kafka.bootstrap.servers", spec.sink_bootstrap_servers)
        for key, value in java_client_options(spec.kafka_config, sink.options).items():
            writer = writer.option(key, value)
    elif sink.kind == "parquet":
        writer = writer.format("parquet").option("path", spark_url(sink.path or ""))
    else:
        writer = writer.format("console").option("truncate", "false")
    return writer.start()


def compat_check_writer(writer: Any) -> Any:
    """The writer of a compatibility check's query (`lifecycle/compat_check.py`): one
    micro-batch into Spark's `noop` sink, which runs the whole plan and writes nothing.

    The check's checkpoint is a copy whose last batch is planned and not committed: on
    start Spark runs that batch again, from its planned offsets, and a once trigger ends the
    query after it (availableNow would go on to the input's end). The job's own sink and its
    options are left out: no transaction, no file, no record leaves the check."""
    return writer.format("noop").trigger(once=True)


def exactly_once_batch_writer(
    spec: JobSpec, on_bad_job: Callable[[BaseException], None] | None = None
) -> Callable[[DataFrame, int], None]:
    """A foreachBatch function that builds the sink on its first batch, when the checkpoint
    exists and names the query id that the sink's marker groups need. A bad input (the
    batch's schema, the sink's settings) goes to `on_bad_job` before it fails the query."""
    from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
    from airflow_provider_kafkaspark.spark.sink import ExactlyOnceKafkaSink

    sinks: dict[str, ExactlyOnceKafkaSink] = {}

    def write(batch: DataFrame, batch_id: int) -> None:
        if "sink" not in sinks:
            extra: dict[str, Any] = {}
            if spec.sink.transaction_timeout_ms is not None:
                extra["transaction_timeout_ms"] = spec.sink.transaction_timeout_ms
            sinks["sink"] = ExactlyOnceKafkaSink(
                producer_config={
                    **spec.kafka_config,
                    "bootstrap.servers": spec.sink_bootstrap_servers,
                },
                topic=spec.sink.topic or "",
                sink_id=spec.sink.sink_id or spec.job_name,
                query_id=CheckpointReader(spec.checkpoint_location).query_id(),
                **extra,
            )
        try:
            sinks["sink"](batch, batch_id)
        except InvalidInputError as exc:
            if on_bad_job is not None:
                on_bad_job(exc)
            raise

    return write
