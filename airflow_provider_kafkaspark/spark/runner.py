"""The job runner that spark-submit starts:

    spark-submit --jars <connector jars> airflow_provider_kafkaspark/spark/runner.py --spec job.json
    python -m airflow_provider_kafkaspark.spark.runner --spec job.json --master 'local[2]'

It reads the job spec, builds the Kafka source, the transformation and the sink, and runs
the query under management (lease, graceful stop, progress, lag commits). Exit codes: 0
stopped cleanly or finished, 1 failed, 2 stopped without draining, 3 lease held by a live
driver, 4 bad job (spec, code, SQL, topics or sink schema; not restarted), 5 a standby that no
handover reached (`spark/standby.py`). Under YARN a driver that ends with a final code (4, 5)
ends its own application once its stopped report is written, so that YARN starts no other
attempt of it (`final_on_yarn`).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):
    # Run as a file by spark-submit: make the package importable from the file's location.
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from airflow_provider_kafkaspark.core.job_code import check_topics_exist
from airflow_provider_kafkaspark.core.jobspec import JobSpec, java_client_options
from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.spark.object_storage import on_s3, s3a_conf, spark_url

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from airflow_provider_kafkaspark.core.job_ref import YarnJobRef

log = logging.getLogger("kafkaspark.runner")

EXIT_BAD_SPEC = 4  # also `managed.EXIT_BAD_JOB`
EXIT_STANDBY_EXPIRED = 5  # a standby that no handover reached (final, not restarted)
# Exits that another attempt would only repeat.
FINAL_EXIT_CODES = frozenset({EXIT_BAD_SPEC, EXIT_STANDBY_EXPIRED})
RM_CONF_KEYS = (
    "yarn.http.policy",
    "yarn.resourcemanager.webapp.address",
    "yarn.resourcemanager.webapp.https.address",
    "yarn.resourcemanager.hostname",
)


def final_on_yarn(exit_code: int, master: str) -> bool:
    """The driver must end its YARN application itself: Spark's ApplicationMaster leaves a
    failed attempt that is not the last one unregistered, and YARN then runs the same bad job
    again until `spark.yarn.maxAppAttempts` is used up, where the local supervisor would stop
    at the first."""
    return master == "yarn" and exit_code in FINAL_EXIT_CODES


def resource_manager_url(conf: Mapping[str, str | None]) -> str | None:
    """The ResourceManager's web address from the driver's Hadoop settings (`RM_CONF_KEYS`),
    or None when they name no host. A bind-all address (0.0.0.0) is where the RM listens, not
    where a client reaches it: the RM's hostname stands in for it."""
    https = (conf.get("yarn.http.policy") or "").strip().upper() == "HTTPS_ONLY"
    if https:
        key, port = "yarn.resourcemanager.webapp.https.address", 8090
    else:
        key, port = "yarn.resourcemanager.webapp.address", 8088
    hostname = (conf.get("yarn.resourcemanager.hostname") or "").strip()
    address = (conf.get(key) or "").strip()
    host, _, given_port = address.rpartition(":") if ":" in address else (address, "", "")
    if host in ("", "0.0.0.0"):
        host = hostname
    if not host or host == "0.0.0.0":
        return None
    return f"{'https' if https else 'http'}://{host}:{given_port or port}"


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

    from airflow_provider_kafkaspark.core.job_code import is_local, locate_python_path

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
    frame = load_transformation(spec)(source_frame(spark, spec))
    writer = frame.writeStream.queryName(spec.job_name).outputMode(spec.sink.output_mode)
    writer = writer.option("checkpointLocation", spark_url(spec.checkpoint_location))
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


def exactly_once_batch_writer(
    spec: JobSpec, on_bad_job: Callable[[BaseException], None] | None = None
) -> Callable[[DataFrame, int], None]:
    """A foreachBatch function that builds the sink on its first batch, when the checkpoint
    exists and names the query id that the sink's marker groups need. A bad input (the
    batch's schema, the sink's settings) goes to `on_bad_job` before it fails the query."""
    from airflow_provider_kafkaspark.core.checkpoint import CheckpointReader
    from airflow_provider_kafkaspark.spark.kafka_sink import ExactlyOnceKafkaSink

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


def build_session(spec: JobSpec, master: str | None) -> SparkSession:
    locations = (spec.checkpoint_location, spec.sink.path)
    # The spec's own settings win over the ones derived from the environment.
    conf = {**s3a_conf(os.environ, locations), **spec.spark_conf}
    if master:
        from airflow_provider_kafkaspark.spark.local_session import local_spark_session

        s3a = any(on_s3(u) for u in locations)
        return local_spark_session(spec.job_name, master=master, conf=conf, s3a=s3a)
    from pyspark.sql import SparkSession

    from airflow_provider_kafkaspark.spark.session import SESSION_DEFAULTS

    # spark-submit's master (a cluster): the settings every driver gets, none of local mode's.
    builder = SparkSession.builder.appName(spec.job_name)
    for key, value in {**SESSION_DEFAULTS, **conf}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def run(spec: JobSpec, master: str | None = None) -> int:
    from airflow_provider_kafkaspark.spark.managed import ManagedOptions, ManagedQuery

    spark = build_session(spec, master)
    log.info("job %s: %s", spec.job_name, spec.to_dict(redact=True))
    options = ManagedOptions(
        job_name=spec.job_name,
        checkpoint=spec.checkpoint_location,
        kafka_config=spec.admin_config() if spec.effective_lag_group else None,
        lag_group=spec.effective_lag_group,
        lease_ttl_s=spec.lease_ttl_s,
        drain_timeout_s=spec.drain_timeout_s,
        progress_batches=spec.progress_batches,
        # Spark's own Kafka sink is at-least-once: a cut-short batch's re-run may duplicate.
        replay_safe_sink=spec.sink.kind != "kafka",
    )
    managed = ManagedQuery(spark, options)

    def start() -> StreamingQuery:
        add_python_path(spark, spec)
        return start_query(spark, spec, managed.record_bad_job)

    def managed_run() -> int:
        if spec.standby_token is not None:
            if not _standby(spark, spec):
                return EXIT_STANDBY_EXPIRED
            try:
                check_checkpoint_release(spec.checkpoint_location, spark.version)
            except InvalidInputError as exc:
                log.error("%s", exc)
                return EXIT_BAD_SPEC
        return managed.run(start)

    own_application: YarnJobRef | None = None
    try:
        code = managed_run()
        if final_on_yarn(code, spark.sparkContext.master or ""):
            # Read while the context lives: its Hadoop settings are the RM's address.
            own_application = yarn_application(spark, spec)
    finally:
        spark.stop()
    if own_application is not None:
        end_application(own_application, code)
    return code


def yarn_application(spark: SparkSession, spec: JobSpec) -> YarnJobRef | None:
    """This driver's YARN application as a job reference, or None (logged) when its Hadoop
    settings name no ResourceManager."""
    from airflow_provider_kafkaspark.core.job_ref import YarnJobRef

    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    url = resource_manager_url({key: hadoop.get(key) for key in RM_CONF_KEYS})
    app_id = spark.sparkContext.applicationId
    if url is None:
        log.error(
            "application %s: the Hadoop settings name no ResourceManager (%s); YARN may "
            "start another attempt of this final exit",
            app_id,
            ", ".join(RM_CONF_KEYS),
        )
        return None
    return YarnJobRef(
        job_name=spec.job_name,
        checkpoint=spec.checkpoint_location,
        application_id=app_id,
        resource_manager=url,
    )


def end_application(ref: YarnJobRef, code: int) -> None:
    """Kill the driver's own application through the ResourceManager, so that no other attempt
    repeats a final exit. An RM out of reach leaves it to YARN's attempts, as before."""
    from airflow_provider_kafkaspark.backends import yarn_rest
    from airflow_provider_kafkaspark.errors import KafkaSparkError

    why = f"kafkaspark: exit {code} ({'bad job' if code == EXIT_BAD_SPEC else 'standby expired'})"
    why += " is final; the driver ended its application (see the checkpoint's stopped report)"
    log.warning(
        "ending application %s at %s: exit %d is final and another YARN attempt would only "
        "repeat it",
        ref.application_id,
        ref.resource_manager,
        code,
    )
    try:
        state = yarn_rest.kill(ref, diagnostics=why)
    except KafkaSparkError as exc:
        log.error("could not end application %s, YARN may retry it: %s", ref.application_id, exc)
        return
    log.info("application %s: the ResourceManager reports %s", ref.application_id, state)


def _standby(spark: SparkSession, spec: JobSpec) -> bool:
    """Warm up, then wait for the handover (`spark/standby.py`); False when none came."""
    from airflow_provider_kafkaspark.spark.standby import await_handover, warm_up

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


def check_spark_release(spec: JobSpec) -> str:
    """This driver's Spark, once it is the one the job names and may continue the checkpoint
    (`check_checkpoint_release`). Raises InvalidInputError (a bad spec: never restarted)
    otherwise."""
    import pyspark

    own = str(pyspark.__version__)
    if spec.spark_version is not None and spec.spark_version != own:
        raise InvalidInputError(
            f"job spec field 'spark_version': the job names Spark {spec.spark_version}, but "
            f"this driver ({sys.executable}) has pyspark {own}: set spark_conf "
            f"'spark.pyspark.driver.python' to an interpreter with pyspark {spec.spark_version}"
        )
    check_checkpoint_release(spec.checkpoint_location, own)
    return own


def check_checkpoint_release(checkpoint: str, own: str) -> None:
    """Refuse a checkpoint a later Spark line wrote (`core/spark_compat.py`), else record this
    driver's Spark as its newest writer when it is newer. A standby checks again once handed
    the checkpoint: the restore that hands it over may have brought a savepoint of a later
    Spark."""
    from airflow_provider_kafkaspark.core.control import ControlFolder, WrittenBy, now_ms
    from airflow_provider_kafkaspark.core.spark_compat import continue_refusal, newest

    control = ControlFolder(checkpoint)
    recorded = control.read_written_by()
    written_by = recorded.spark_version if recorded else None
    refusal = continue_refusal(written_by, own)
    if refusal is not None:
        raise InvalidInputError(f"{checkpoint}: {refusal}")
    newest_writer = newest([written_by, own]) or own
    if newest_writer != written_by:
        control.write_written_by(WrittenBy(newest_writer, now_ms()))


def dump_thread_stacks(signum: int = 0, frame: FrameType | None = None) -> None:
    """Every Python thread's stack to stderr (the driver log), as a SIGUSR1 handler.

    A Python-level handler, not faulthandler's: faulthandler reads the other threads' frames
    without the GIL while they run, and a driver whose py4j threads were busy crashed in
    the dump (its frames read as garbage), which took the driver and its JVM down. Here the
    handler runs in the main thread between bytecodes, holding the GIL (a blocked socket read
    is interrupted for it and resumed)."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    lines = []
    for ident, stack in sys._current_frames().items():
        lines.append(f"Thread {ident:#x} {names.get(ident, '?')} (most recent call first):\n")
        lines.extend(reversed(traceback.format_stack(stack)))
    sys.stderr.write("".join(lines))
    sys.stderr.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spec", required=True, help="job spec JSON file")
    parser.add_argument("--master", default=None, help="e.g. local[2]; default: spark-submit's")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)  # one line per callback otherwise
    # `kill -USR1 <pid>` writes every Python thread's stack to the driver log: what a person
    # (or the reliability harness) needs when a driver stalls without a word.
    signal.signal(signal.SIGUSR1, dump_thread_stacks)
    try:
        spec = JobSpec.load(args.spec)
        log.info("job %s: Spark %s", spec.job_name, check_spark_release(spec))
    except InvalidInputError as exc:
        log.error("%s", exc)
        return EXIT_BAD_SPEC
    return run(spec, args.master)


if __name__ == "__main__":
    sys.exit(main())
