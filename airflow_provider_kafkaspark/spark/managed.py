"""A managed streaming query: lease, graceful stop, progress and lag commits around a query.

`run_managed` is the one call for authors who bring their own PySpark script:

    from airflow_provider_kafkaspark.spark.managed import run_managed
    exit_code = run_managed(spark, lambda: df.writeStream...start(), job_name="clicks",
                            checkpoint="s3://bucket/clicks/checkpoint",
                            kafka_config={"bootstrap.servers": "broker:9092"})
    sys.exit(exit_code)

Give a factory (as above) rather than a started query: the lease is taken before the query
starts, so a second driver on the same checkpoint never touches it.

Stop: a stop request file in the control folder (or SIGTERM) makes the driver wait until no
batch is in flight, stop the query, write `stopped.json` and return 0. A request
`at_batch_boundary` stops once the batch in flight has committed instead (`core/control/drain`): a
batch Spark planned as that one ended is cut short and stays in the checkpoint, and the next
driver runs it again. A stop that cannot drain within the request's `drain_timeout_s`
(SIGTERM: the options' value) interrupts the query, says so in `stopped.json` and returns
`EXIT_NOT_DRAINED`; Spark re-runs the interrupted batch on restart. `stopped.json` is
written after the query has stopped and before the lease is released, so it alone tells a
reader that the checkpoint is free.

A bad job (a transformation that cannot be imported, SQL that does not parse, a topic that
does not exist, a schema the sink cannot write: `InvalidInputError` or Spark's
`AnalysisException`) ends with `EXIT_BAD_JOB` and a stopped report giving the reason;
supervisors do not restart it, since it would fail the same way again.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.core.cluster.host_process import holder_gone
from airflow_provider_kafkaspark.core.control.drain import (
    FinishedTrigger,
    may_stop_now,
    stopped_cleanly,
)
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import (
    KUBERNETES_JOB_APP,
    Lease,
    now_ms,
    takeover_step,
)
from airflow_provider_kafkaspark.core.control.reports import StoppedReport
from airflow_provider_kafkaspark.core.control.requests import StopRequest
from airflow_provider_kafkaspark.core.kafka.offsets import offsets_json
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointPosition, CheckpointReader
from airflow_provider_kafkaspark.errors import InvalidInputError, KafkaSparkError, LeaseHeldError
from airflow_provider_kafkaspark.spark.lease_heartbeat import LeaseHeartbeat
from airflow_provider_kafkaspark.spark.progress import LagCommitter, ProgressListener
from airflow_provider_kafkaspark.spark.query_stop import stop_query

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger("kafkaspark.driver")

EXIT_STOPPED = 0
EXIT_FAILED = 1
EXIT_NOT_DRAINED = 2
EXIT_LEASE_HELD = 3
EXIT_BAD_JOB = 4
# The lease was taken over while this driver ran (it was paused or cut off past its ttl):
# final everywhere, since a restart would only wait for the other driver's lease, and take the
# job back once that driver was stopped.
EXIT_LEASE_LOST = 6
LISTENER_CATCH_UP_S = 10.0
POLL_S = 1  # seconds between looks at the stop request (awaitTermination takes int)
# A starting driver waits at most this long for a lease whose holder it cannot see to expire
# (a lease's ttl is 30 s by default; a holder seen renewing is refused at once).
MAX_TAKEOVER_WAIT_S = 180.0


@dataclass
class ManagedOptions:
    job_name: str
    checkpoint: str
    kafka_config: Mapping[str, Any] | None = None  # None: no lag commits
    lag_group: str | None = None
    lease_ttl_s: float = 30.0
    drain_timeout_s: float = 120.0
    progress_batches: int = 20
    handle_sigterm: bool = True
    # The sink writes a re-run batch once (the exactly-once Kafka sink, file sinks). False
    # (Spark's at-least-once Kafka sink): every stop waits for a moment with no batch in
    # flight, even one requested at the batch boundary.
    replay_safe_sink: bool = True
    # Every failure of the query is reported as a bad job (`EXIT_BAD_JOB`, final): a
    # compatibility check's one batch, whose failure is the answer, not something to retry.
    failures_final: bool = False


class ManagedQuery:
    def __init__(self, spark: SparkSession, options: ManagedOptions) -> None:
        self.spark = spark
        self.options = options
        self.control = ControlFolder(options.checkpoint)
        self.lease = Lease.new(options.job_name, ttl_ms=int(options.lease_ttl_s * 1000))
        self.stop_reason: str | None = None
        self.stop_request: StopRequest | None = None
        self.committed_at_start: int | None = None
        self.lost_lease = False
        # Lost to another driver (a fenced renewal refused), not merely unrenewed in time:
        # then no restart of this driver may follow.
        self.lease_taken_over = False
        self.drain_timeout_s = options.drain_timeout_s
        self.at_batch_boundary = False
        self.bad_job: BaseException | None = None
        self._stop_event = threading.Event()
        self._done = threading.Event()
        self._heartbeat_thread: threading.Thread | None = None
        self._renewed_at = time.monotonic()  # monotonic time the lease was taken
        self._finished = False
        self.lag: LagCommitter | None = None
        if options.kafka_config is not None and options.lag_group:
            from airflow_provider_kafkaspark.spark.lag_worker import LagCommitProcess

            # In a child process: a librdkafka abort must not take the driver with it.
            self.lag = LagCommitter(LagCommitProcess(options.kafka_config), options.lag_group)
        self.listener = ProgressListener(
            self.control, keep_batches=options.progress_batches, lag=self.lag
        )

    # -- entry point ----------------------------------------------------------------------

    def run(self, start: Callable[[], StreamingQuery]) -> int:
        app_id, attempt_id = application_attempt(self.spark)
        self.lease = replace(self.lease, application_id=app_id, attempt_id=attempt_id)
        try:
            previous = self._take_lease()
        except LeaseHeldError as exc:
            log.error("refusing to start: %s", exc)
            return EXIT_LEASE_HELD
        if previous is not None:
            log.warning(
                "took over the lease of %s (heartbeat %.0fs ago)",
                previous.describe(),
                previous.age_ms() / 1000,
            )
        # A stop request already there is honoured: it may have been written between the
        # submit and this start. Submitters clear stale ones before they start a driver.
        self._heartbeat_thread = threading.Thread(
            target=self._heartbeat, name="kafkaspark-lease", daemon=True
        )
        self._heartbeat_thread.start()
        if self.options.handle_sigterm and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_sigterm)
        self.spark.streams.addListener(self.listener)
        reader = CheckpointReader(self.options.checkpoint)
        self.committed_at_start = reader.position().latest_committed if reader.exists() else None
        try:
            try:
                query = start()
            except Exception as exc:
                if not (is_bad_job(exc) or self.options.failures_final):
                    raise
                self.record_bad_job(exc)
                return self._finish("bad job", EXIT_BAD_JOB, describe_error(exc))
            self.listener.watch(str(query.id))
            log.info(
                "query %s started for job %s (checkpoint %s, lease %s)",
                query.id,
                self.options.job_name,
                self.options.checkpoint,
                self.lease.owner_id[:8],
            )
            return self._supervise(query)
        finally:
            self._stop_heartbeat()
            self.spark.streams.removeListener(self.listener)
            if self.lag is not None:
                self.lag.close()
            if not self.lost_lease and not self._finished:
                self.control.release_lease(self.lease)

    def record_bad_job(self, exc: BaseException) -> None:
        """Called by the sink (or `start`) with an error that re-running cannot heal; the
        query's failure is then reported as a bad job."""
        if self.bad_job is None:
            self.bad_job = exc

    # -- supervision ------------------------------------------------------------------------

    def _supervise(self, query: StreamingQuery) -> int:
        while query.isActive:
            if self._stop_event.is_set() or self._stop_requested():
                return self._graceful_stop(query)
            try:
                query.awaitTermination(POLL_S)
            except Exception as exc:
                # Spark raises the query's failure here; a check reports it (below). A failure
                # on another driver's batch (CONCURRENT_STREAM_LOG_UPDATE, after a pause) may
                # come before the heartbeat finds the lease taken: ask the lease first.
                if not self._still_holding():
                    break
                if is_bad_job(exc):
                    # A refused ACL, a missing class: the next driver would fail the same way.
                    self.record_bad_job(exc)
                    break
                if not self.options.failures_final or query.isActive:
                    raise
        error = query.exception()
        if self.lost_lease:
            # The checkpoint and its control folder now belong to the other driver, or may
            # soon: a driver that could not renew in time is restarted, to take it again.
            log.error("exiting without a stopped report: the lease was lost")
            return self._lost_lease_exit()
        if self.bad_job is not None:
            return self._finish("bad job", EXIT_BAD_JOB, describe_error(self.bad_job))
        if error is not None and (self.options.failures_final or is_bad_job(error)):
            return self._finish("bad job", EXIT_BAD_JOB, describe_error(error))
        if error is not None:
            return self._finish("query failed", EXIT_FAILED, str(error)[:2000])
        # availableNow / once triggers end by themselves when the input is drained.
        return self._finish("query finished", EXIT_STOPPED, "")

    def _stop_requested(self) -> bool:
        try:
            request = self.control.read_stop_request()
        except KafkaSparkError as exc:
            log.warning("unreadable stop request, ignored: %s", exc)
            return False
        if request is None:
            return False
        self.stop_reason = f"stop request by {request.requested_by}: {request.reason}"
        self.stop_request = request
        # One drain bound: the one the stopper wrote, which it also waits by.
        self.drain_timeout_s = request.drain_timeout_s
        self.at_batch_boundary = request.at_batch_boundary and self.options.replay_safe_sink
        return True

    def _graceful_stop(self, query: StreamingQuery) -> int:
        reason = self.stop_reason or "SIGTERM"
        log.info(
            "stopping gracefully (%s): waiting for %s",
            reason,
            "the batch in flight" if self.at_batch_boundary else "a moment with no batch in flight",
        )
        deadline = time.monotonic() + self.drain_timeout_s
        at_request = FinishedTrigger.of(query.lastProgress)
        while query.isActive:
            active = bool(query.status.get("isTriggerActive", False))
            watch = active and self.at_batch_boundary
            if may_stop_now(
                trigger_active=active,
                at_batch_boundary=self.at_batch_boundary,
                finished_at_request=at_request,
                finished_now=FinishedTrigger.of(query.lastProgress) if watch else None,
            ):
                stop_query(query)
                break
            if time.monotonic() > deadline:
                log.error(
                    "no quiet moment within %.0fs: interrupting the batch in flight",
                    self.drain_timeout_s,
                )
                stop_query(query)
                return self._finish(
                    reason,
                    EXIT_NOT_DRAINED,
                    f"could not drain within {self.drain_timeout_s:g}s; "
                    f"the interrupted batch re-runs on restart",
                )
            time.sleep(0.02)
        return self._finish(reason, EXIT_STOPPED, "drained")

    def _finish(self, reason: str, code: int, message: str) -> int:
        if not self._still_holding():
            return self._lost_lease_exit()
        reader = CheckpointReader(self.options.checkpoint)
        position = reader.position() if reader.exists() else CheckpointPosition.empty(reader.url)
        clean = stopped_cleanly(
            pending_batch=position.pending_batch,
            cut_allowed=self.at_batch_boundary and code == EXIT_STOPPED,
        )
        ran_a_batch = position.latest_committed is not None and (
            self.committed_at_start is None or position.latest_committed > self.committed_at_start
        )
        if ran_a_batch and not self.listener.wait_for_batch(
            position.latest_committed or 0, LISTENER_CATCH_UP_S
        ):
            log.warning("progress of batch %s not reported by Spark", position.latest_committed)
        if code == EXIT_STOPPED and position.pending_batch is not None:
            # Spark planned the next batch as the query stopped: at the batch boundary, by
            # design; at a quiet moment, a trigger fired between our check and stop(). The
            # checkpoint keeps its offsets, and the next driver runs it again.
            message = (
                f"stopped after batch {position.latest_committed}; batch "
                f"{position.pending_batch} was planned as the query stopped and re-runs on "
                f"restart"
            )
            if not clean:
                code = EXIT_NOT_DRAINED
        offsets = offsets_json(position.committed_offsets)
        if self.lag is not None and offsets:
            self.lag.flush()
            if self.lag.last_committed != offsets:
                self.lag.commit(offsets)
        if self._stop_event.is_set() or self.stop_reason:
            # Answered by the report below; cleared first, so that no request written after
            # the report (for a next driver) is lost.
            self.control.clear_stop_request()
        # No heartbeat may rewrite the lease once the report says the driver is done.
        self._stop_heartbeat()
        request = self.stop_request
        try:
            self.control.finish(
                self.lease,
                StoppedReport(
                    stopped_at_ms=now_ms(),
                    reason=reason,
                    clean=clean,
                    last_planned_batch=position.latest_planned,
                    last_committed_batch=position.latest_committed,
                    offsets=offsets,
                    owner_id=self.lease.owner_id,
                    message=message,
                    exit_code=code,
                    spark_version=self.spark.version,
                    requested_by=request.requested_by if request else None,
                    requested_at_ms=request.requested_at_ms if request else None,
                ),
            )
        except LeaseHeldError as exc:
            self._lose_lease(f"{exc}; no stopped report written", taken_over=True)
            return EXIT_LEASE_LOST
        self._finished = True
        log.info(
            "stopped (%s): planned %s, committed %s, clean=%s, exit %d",
            reason,
            position.latest_planned,
            position.latest_committed,
            clean,
            code,
        )
        return code

    # -- lease heartbeat and signals ----------------------------------------------------------

    def _stop_heartbeat(self) -> None:
        self._done.set()
        thread = self._heartbeat_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=30)

    def _take_lease(self) -> Lease | None:
        """Take the lease, waiting out one whose holder may have died where this host cannot
        see it (another node) instead of failing this attempt; refuse at once a holder seen
        renewing. Bounded by the held lease's ttl (our clock) and a poll count."""
        watched: Lease | None = None
        since = time.monotonic()
        renewed = False
        poll_s = min(1.0, self.options.lease_ttl_s / 6)
        for _ in range(int(MAX_TAKEOVER_WAIT_S / poll_s) + 2):
            held = self.control.read_lease()
            if watched is None or held is None or held.owner_id != watched.owner_id:
                watched, since, renewed = held, time.monotonic(), False
            elif held != watched:
                renewed = True
            step = takeover_step(
                held,
                self.lease,
                unchanged_for_ms=(time.monotonic() - since) * 1000,
                renewed_while_watched=renewed,
                holder_gone=held is not None and self._holder_is_dead(held),
                holder_stopped=held is not None and self._holder_stopped(held),
            )
            if step == "refuse" or (
                step == "wait" and time.monotonic() - since > MAX_TAKEOVER_WAIT_S
            ):
                assert held is not None
                raise LeaseHeldError(
                    f"{self.control.location.describe('lease.json')}: held by "
                    f"{held.describe()}, {'renewed' if renewed else 'unchanged'} while this "
                    f"driver watched it for {time.monotonic() - since:.1f}s; two drivers on "
                    f"one checkpoint read partitions twice and corrupt it"
                )
            if step == "take":
                self.lease = self.lease.taken()
                previous = self.control.acquire_lease(self.lease, over=held)
                self._renewed_at = time.monotonic()
                return previous
            if watched is held:
                log.info(
                    "lease held by %s: waiting up to %.0fs for it to be renewed or expire",
                    held.describe() if held else "nobody",
                    (held.ttl_ms / 1000) if held else 0,
                )
            time.sleep(poll_s)
        raise LeaseHeldError(
            f"{self.control.location.describe('lease.json')}: still held after "
            f"{MAX_TAKEOVER_WAIT_S:.0f}s"
        )

    def _heartbeat(self) -> None:
        """Renew the lease every ttl/3 (`lease_heartbeat.py`). A renewal is fenced
        (`ControlFolder.renew_lease`): a lease taken over or removed while this driver was
        paused or cut off is lost, and the query stops at once. So does one not renewed within
        its ttl (by this process's monotonic clock, which runs on while the process is paused,
        and whatever a hanging renewal call does): another driver may hold it by now."""

        def renewed(lease: Lease) -> None:
            self.lease = lease

        LeaseHeartbeat(
            renew=lambda: self.control.renew_lease(self.lease),
            ttl_s=self.options.lease_ttl_s,
            renewed_at=self._renewed_at,
            on_renewed=renewed,
            on_lost=lambda why, taken_over: self._lose_lease(why, taken_over=taken_over),
        ).run(self._done)

    def _still_holding(self) -> bool:
        """A fenced renewal before the driver's last writes (lag offsets, the stop request,
        the report): a driver whose query ended after its lease was taken over (Spark itself
        refuses a batch another driver planned) must leave the control folder alone."""
        if self.lost_lease:
            log.error("exiting without a stopped report: the lease was lost")
            return False
        try:
            self.lease = self.control.renew_lease(self.lease)
        except LeaseHeldError as exc:
            self._lose_lease(f"{exc}; no stopped report written", taken_over=True)
            return False
        except Exception as exc:  # noqa: BLE001 - the report's own write says more
            log.warning("lease check before the stopped report failed: %s", exc)
        return True

    def _lost_lease_exit(self) -> int:
        """Exit 6 when another driver took the lease over, else 1 (restarted). A driver that
        resumes from a pause finds its lease unrenewed for longer than its ttl before any
        renewal has answered; one more fenced renewal tells: refused, it was taken over (and
        perhaps released since); accepted, it is still this driver's, and is released for the
        restart; unanswered, the store is out of reach, and the restart will see."""
        if self.lease_taken_over:
            return EXIT_LEASE_LOST
        try:
            self.lease = self.control.renew_lease(self.lease)
        except LeaseHeldError as exc:
            log.error("the lease was taken over: %s", exc)
            self.lease_taken_over = True
            return EXIT_LEASE_LOST
        except Exception as exc:  # noqa: BLE001 - the store is still out of reach
            log.warning("could not learn whether the lease was taken over: %s", exc)
            return EXIT_FAILED
        self.control.release_lease(self.lease)
        return EXIT_FAILED

    def _lose_lease(self, why: str, *, taken_over: bool = False) -> None:
        self.lease_taken_over = self.lease_taken_over or taken_over
        log.error("lease lost, stopping the query at once: %s", why)
        self.lost_lease = True
        for query in self.spark.streams.active:
            stop_query(query)

    def _holder_stopped(self, held: Lease) -> bool:
        """The holder signed a stopped report: its query has stopped (the lease file goes
        right after the report)."""
        try:
            stopped = self.control.read_stopped()
        except KafkaSparkError:
            return False
        return stopped is not None and stopped.owner_id == held.owner_id

    def _holder_is_dead(self, current: Lease) -> bool:
        """A fresh lease whose driver ran on this host and is gone (a crash a moment ago)
        need not be waited out: no other driver can be using it."""
        if current.host != self.lease.host or not current.is_fresh():
            return False
        if holder_gone(current.host, current.pid):
            log.warning("lease holder pid %d on this host is gone: taking over", current.pid)
            return True
        return False

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        log.info("SIGTERM received")
        self.stop_reason = "SIGTERM"
        self._stop_event.set()


def application_attempt(spark: SparkSession) -> tuple[str | None, str | None]:
    """The cluster manager's application id and attempt id of this driver (YARN: the
    application and "1", "2", ...; a Kubernetes Job's driver pod: the Job's uid and the pod's,
    from the variables its manifest sets; local mode: the app id and no attempt)."""
    from airflow_provider_kafkaspark.core.cluster.kubernetes_job import JOB_UID_ENV, POD_UID_ENV

    job_uid, pod_uid = os.environ.get(JOB_UID_ENV), os.environ.get(POD_UID_ENV)
    if job_uid and pod_uid:
        return f"{KUBERNETES_JOB_APP}{job_uid}", pod_uid
    context = spark.sparkContext
    attempt: str | None = None
    try:
        option = context._jsc.sc().applicationAttemptId()
        attempt = str(option.get()) if option.isDefined() else None
    except Exception:  # noqa: BLE001 - a gateway without it: no attempt, the ttl rule applies
        attempt = None
    return context.applicationId, attempt


def is_bad_job(exc: BaseException) -> bool:
    """Errors of the job itself, which a restart cannot heal: a missing jar among them, since
    the next driver gets the same jars (`spark/missing_class.py`), and Kafka refusing the
    job's principal an ACL, since the next driver logs in as the same one."""
    from airflow_provider_kafkaspark.core.kafka.client import authorization_refusal
    from airflow_provider_kafkaspark.spark.missing_class import find_missing

    text = str(exc)
    if isinstance(exc, InvalidInputError) or find_missing(text) is not None:
        return True
    if authorization_refusal(text) is not None:
        return True
    try:
        from pyspark.errors import AnalysisException
    except ImportError:  # pragma: no cover - pyspark < 3.4
        return False
    return isinstance(exc, AnalysisException)


def describe_error(exc: BaseException) -> str:
    """One paragraph for the stopped report: the error's type and message, no JVM stack; for
    a missing jar, what was not found and the artifact that provides it; for an ACL Kafka
    refused, that refusal first."""
    from airflow_provider_kafkaspark.core.kafka.client import authorization_refusal
    from airflow_provider_kafkaspark.spark.missing_class import find_missing, running_spark

    missing = find_missing(str(exc), running_spark())
    if missing is not None:
        # A Py4JJavaError's text is the Java stack trace: the line says all a reader needs.
        return f"{missing.describe()} ({type(exc).__name__})"[:2000]
    refusal = authorization_refusal(str(exc))
    if refusal is not None:
        # The refusal may sit deep in an executor's traceback: its line comes first.
        line = next(ln.strip() for ln in str(exc).splitlines() if refusal in ln)
        return (
            f"Kafka refused the job's principal ({refusal}): grant the ACLs "
            f"`kafkaspark job acls` lists for the spec. {line}"
        )[:2000]
    # A query's failure ends with the query's description (offsets, plan): not the reason.
    text = str(exc).split("\nJVM stacktrace:", 1)[0].split("\n=== Streaming Query ===", 1)[0]
    text = without_plan(text.strip())
    return f"{type(exc).__name__}: {text}"[:2000]


# How the lines of a logical plan that Spark appends to an analysis error begin.
_PLAN_LINE = ("'", "+- ", ":- ", "== ")


def without_plan(text: str) -> str:
    """An error's text up to the logical plan Spark appends to it (an AnalysisException
    prints the whole plan of the query): the reason is in the lines before it."""
    lines = text.splitlines()
    for i, line in enumerate(lines[1:], 1):
        if line.lstrip().startswith(_PLAN_LINE):
            return "\n".join(lines[:i]).rstrip(" ;\n")
    return text


def run_managed(
    spark: SparkSession,
    start: Callable[[], StreamingQuery],
    *,
    job_name: str,
    checkpoint: str,
    kafka_config: Mapping[str, Any] | None = None,
    lag_group: str | None = None,
    lease_ttl_s: float = 30.0,
    drain_timeout_s: float = 120.0,
    progress_batches: int = 20,
) -> int:
    """Run a streaming query under management; returns the process exit code."""
    group = lag_group if lag_group is not None else f"kafkaspark.{job_name}"
    options = ManagedOptions(
        job_name=job_name,
        checkpoint=checkpoint,
        kafka_config=kafka_config,
        lag_group=group or None,
        lease_ttl_s=lease_ttl_s,
        drain_timeout_s=drain_timeout_s,
        progress_batches=progress_batches,
    )
    return ManagedQuery(spark, options).run(start)
