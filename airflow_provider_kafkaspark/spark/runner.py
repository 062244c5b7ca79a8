"""The job runner that spark-submit starts:

    spark-submit --jars <connector jars> airflow_provider_kafkaspark/spark/runner.py --spec job.json
    python -m airflow_provider_kafkaspark.spark.runner --spec job.json --master 'local[2]'

It reads the job spec, builds the Kafka source, the transformation and the sink, and runs
the query under management (lease, graceful stop, progress, lag commits). Exit codes: 0
stopped cleanly or finished, 1 failed, 2 stopped without draining, 3 lease held by a live
driver, 4 bad job (spec, code, SQL, topics or sink schema, or the connector jars or Java
missing where the driver runs; not restarted), 5 a standby that no handover reached
(`spark/standby.py`). Under YARN a driver that ends with a final code (4, 5) ends its own
application once its stopped report is written, so that YARN starts no other attempt of it
(`spark/final_exit.py`).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING

if __package__ in (None, ""):
    # Run as a file by spark-submit: make the package importable from the file's location.
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import (
    InvalidInputError,
    JarsNotFoundError,
    JavaNotFoundError,
)
from airflow_provider_kafkaspark.spark.final_exit import (
    EXIT_BAD_SPEC,
    EXIT_STANDBY_EXPIRED,
    end_application,
    final_on_yarn,
    yarn_application,
)
from airflow_provider_kafkaspark.spark.object_storage import on_s3, s3a_conf, s3a_credentials_conf
from airflow_provider_kafkaspark.spark.query import add_python_path, start_query
from airflow_provider_kafkaspark.spark.secrets import load_job_spec
from airflow_provider_kafkaspark.spark.spark_release import (
    check_checkpoint_release,
    check_spark_release,
)
from airflow_provider_kafkaspark.spark.standby import run_standby

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef

log = logging.getLogger("kafkaspark.runner")


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
    # Its JVM started before this process read its credentials (secrets.load_job_spec).
    builder = SparkSession.builder.appName(spec.job_name)
    conf = {**s3a_credentials_conf(os.environ), **conf} if any(map(on_s3, locations)) else conf
    for key, value in {**SESSION_DEFAULTS, **conf}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def run(spec: JobSpec, master: str | None = None) -> int:
    from airflow_provider_kafkaspark.spark.managed import ManagedOptions, ManagedQuery

    try:
        spark = build_session(spec, master)
    except (JarsNotFoundError, JavaNotFoundError) as exc:
        # The same jars or Java would be missing at every restart: a bad job, not a crash.
        log.error("%s", exc)
        report_unstartable(spec, str(exc))
        return EXIT_BAD_SPEC
    log.info("job %s: %s", spec.job_name, spec.to_dict(redact=True))
    # A compatibility check's driver commits no offsets to the job's consumer group, and
    # any failure of its one batch is the new code's: final, not restarted.
    lag_group = None if spec.compat_check else spec.effective_lag_group
    options = ManagedOptions(
        job_name=spec.job_name,
        checkpoint=spec.checkpoint_location,
        kafka_config=spec.admin_config() if lag_group else None,
        lag_group=lag_group,
        lease_ttl_s=spec.lease_ttl_s,
        drain_timeout_s=spec.drain_timeout_s,
        progress_batches=spec.progress_batches,
        # Spark's own Kafka sink is at-least-once: a cut-short batch's re-run may duplicate.
        replay_safe_sink=spec.sink.kind != "kafka",
        failures_final=spec.compat_check,
    )
    managed = ManagedQuery(spark, options)

    def start() -> StreamingQuery:
        add_python_path(spark, spec)
        return start_query(spark, spec, managed.record_bad_job)

    def managed_run() -> int:
        if spec.standby_token is not None:
            if not run_standby(spark, spec):
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


def report_unstartable(spec: JobSpec, why: str) -> None:
    """A stopped report for a driver that could not build its session, so that a health
    sensor, a stop and the jobs view say why without its log. Not over a live driver's lease:
    the report would end that driver's run for every reader."""
    from airflow_provider_kafkaspark.core.control.folder import ControlFolder
    from airflow_provider_kafkaspark.core.control.lease import now_ms
    from airflow_provider_kafkaspark.core.control.reports import StoppedReport
    from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader

    try:
        control = ControlFolder(spec.checkpoint_location)
        if control.live_lease() is not None:
            return
        reader = CheckpointReader(spec.checkpoint_location)
        position = reader.position() if reader.exists() else None
        control.write_stopped(
            StoppedReport(
                stopped_at_ms=now_ms(),
                reason="bad job",
                clean=position is None or position.pending_batch is None,
                last_planned_batch=position.latest_planned if position else None,
                last_committed_batch=position.latest_committed if position else None,
                message=f"the driver cannot start: {why}",
                exit_code=EXIT_BAD_SPEC,
            )
        )
    except Exception as exc:  # noqa: BLE001 - the exit code still says bad job
        log.warning("no stopped report written for %s: %s", spec.checkpoint_location, exc)


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
        spec = load_job_spec(args.spec)
        log.info("job %s: Spark %s", spec.job_name, check_spark_release(spec))
    except InvalidInputError as exc:
        log.error("%s", exc)
        return EXIT_BAD_SPEC
    return run(spec, args.master)


if __name__ == "__main__":
    sys.exit(main())
