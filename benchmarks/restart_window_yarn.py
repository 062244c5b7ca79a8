"""Restart-window downtime on YARN: a stop with a savepoint, its restore and a warm handover to
a standby application, against a kill of the application and a resubmit from the checkpoint.

Everything runs as users run it on a cluster, on one machine: the local ResourceManager and
NodeManager (`LocalYarnCluster`) with spark-submit staging on the local S3 server, the
checkpoint and savepoints on S3, the connector and S3A jars given as the submit host's paths
(staged once per version, `backends/staged_jars.py`), drivers in YARN application masters
submitted through `YarnBackend` as the operators submit them. The job is the stateless
passthrough (`reliability.stack.passthrough_spec`) with the exactly-once sink, fed at `rate`
records/s by a `SteadyProducer` all along.

- `handover` (`handover=warm`, the restart window's default): a standby is submitted as its
  own YARN application (`handover.submit_standby`) and warms up while the old driver runs;
  then the stop request at a batch boundary, the drain, `savepoint_after_stop`,
  `restore_for_submit` in `checkpoint` mode, `hand_over`. With `handover=cold` the restore
  submits a new application instead (the window before the standby existed on YARN).
- `resubmit`: the application killed through the ResourceManager once a batch has committed,
  then at once a new submit on the same checkpoint.

Downtime = the end of the old driver's last batch -> the end of the new driver's first: the
batch's trigger time plus its `triggerExecution` duration, as the driver reports them in
progress.json (Spark's own clock of this one machine; an object store's modification times
are whole seconds). Each round runs both paths on their own topics and checkpoints, in
alternating order; once the new driver ran a few batches the producer stops, the job catches
up, and a read_committed reader counts the output (duplicates, missing). Every submit's
`jars_uploaded_bytes` and its application's own staging folder are recorded: the first submit
of a version uploads the jars, later ones kilobytes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from restart_window import PathRun, alternate, median_s, summarize  # noqa: E402

from airflow_provider_kafkaspark.backends.base import SubmitOptions  # noqa: E402
from airflow_provider_kafkaspark.backends.yarn import YarnBackend  # noqa: E402
from airflow_provider_kafkaspark.core.cluster.job_ref import (  # noqa: E402
    YarnJobRef,
    job_ref_from_dict,
)
from airflow_provider_kafkaspark.core.control.folder import ControlFolder  # noqa: E402
from airflow_provider_kafkaspark.spark.local_session import spark_jars_option  # noqa: E402
from reliability import stack  # noqa: E402

BUCKET = "kafkaspark-bench"
STAGING = f"s3a://{BUCKET}/staging"
CONN_ID = "spark_bench_yarn"
SINK = "kafka_exactly_once"
GOAL_LOCAL_S = 5.8  # the warm handover's median downtime on one host (restart_window.json)
GOAL_LOCAL_FACTOR = 2.0
GOAL_RESUBMIT_RATIO = 0.4


@dataclasses.dataclass(frozen=True)
class Setup:
    bootstrap: str
    base: str  # the S3 folder of this run
    rate: float
    partitions: int
    warm_batches: int
    after_batches: int
    timeout_s: float
    trigger: str
    lease_ttl_s: float
    handover: str
    backend: YarnBackend
    aws: dict[str, str]
    workdir: Path


def _batch_end(batch: Any) -> float:
    """When a batch ended (epoch s): its trigger time plus its triggerExecution."""
    start = dt.datetime.fromisoformat(batch.timestamp.replace("Z", "+00:00")).timestamp()
    return float(start + batch.duration_ms.get("triggerExecution", 0) / 1000)


def _progress(checkpoint: str) -> list[Any]:
    try:
        found = ControlFolder(checkpoint).read_progress()
    except Exception:  # noqa: BLE001 - not written yet, or being replaced
        return []
    return list(found.batches) if found is not None else []


def _application_staged_bytes(app_id: str) -> int:
    """The bytes of an application's own staging folder (Spark's
    <staging>/<user>/.sparkStaging/<application>, there while the application runs)."""
    import fsspec

    fs = fsspec.filesystem("s3")
    return sum(
        fs.du(p) for p in fs.glob(f"{STAGING.removeprefix('s3a://')}/*/.sparkStaging/{app_id}")
    )


def _wait(what: str, probe: Any, timeout_s: float, poll_s: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout_s:g}s waiting for {what}")
        time.sleep(poll_s)


class YarnJob:
    """One path's job: topics, checkpoint, producer, and its YARN applications (killed at the
    end)."""

    def __init__(self, setup: Setup, name: str) -> None:
        self.setup = setup
        self.name = name
        self.source, self.sink = f"{name}-in", f"{name}-out"
        self.checkpoint = f"{setup.base}/{name}/checkpoint"
        self.savepoints = f"{setup.base}/{name}/savepoints"
        spec = stack.passthrough_spec(
            bootstrap=setup.bootstrap,
            checkpoint=self.checkpoint,
            source=self.source,
            sink=self.sink,
            job_name=name,
            trigger_interval=setup.trigger,
        )
        self.spec = dataclasses.replace(
            spec,
            sink=dataclasses.replace(spec.sink, kind=SINK),
            spark_conf={"spark.sql.shuffle.partitions": "2"},
            lease_ttl_s=setup.lease_ttl_s,
        ).validate()
        self.options = SubmitOptions(
            workdir=str(setup.workdir),
            submitted_by=f"benchmark:restart_window_yarn:{name}",
            env=dict(setup.aws),
        )
        self.refs: list[YarnJobRef] = []
        self.submits: list[dict[str, Any]] = []
        stack.create_topics(
            setup.bootstrap, {self.source: setup.partitions, self.sink: setup.partitions}
        )
        self.producer = stack.SteadyProducer(
            setup.bootstrap, self.source, count=int(setup.rate * 7200), rate=setup.rate
        )

    def submit(self, spec: Any) -> YarnJobRef:
        from airflow_provider_kafkaspark.lifecycle.submit import submit_job

        began = time.monotonic()
        handle = submit_job(self.setup.backend, spec, self.options)
        return self._track(handle, time.monotonic() - began)

    def _track(self, handle: dict[str, Any], submit_s: float | None) -> YarnJobRef:
        ref = job_ref_from_dict(handle["job_ref"])
        assert isinstance(ref, YarnJobRef)
        self.refs.append(ref)
        self.submits.append(
            {
                "application_id": ref.application_id,
                "jars_uploaded_bytes": handle.get("jars_uploaded_bytes"),
                "application_staged_bytes": _application_staged_bytes(ref.application_id),
                "submit_s": None if submit_s is None else round(submit_s, 3),
            }
        )
        return ref

    def start(self) -> YarnJobRef:
        self.producer.start()
        ref = self.submit(self.spec)
        self.wait_batch_after(ref, self.setup.warm_batches - 2)
        return ref

    def wait_batch_after(self, ref: YarnJobRef, after: int) -> Any:
        """The progress entry of the first batch past `after` (the driver must live)."""

        def found() -> Any:
            newer = [b for b in _progress(self.checkpoint) if b.batch_id > after]
            if newer:
                return newer[0]
            if not self.setup.backend.alive(ref):
                raise RuntimeError(f"{self.name}: {ref.application_id} ended: {self.status(ref)}")
            return None

        return _wait(f"{self.name}: a batch after {after}", found, self.setup.timeout_s)

    def status(self, ref: YarnJobRef) -> dict[str, Any]:
        return self.setup.backend.status(ref).to_dict()

    def finish(self, ref: YarnJobRef, first_batch: int) -> stack.OnceCount:
        """Let the new driver run a few batches, stop the input, catch up, count the output."""
        from airflow_provider_kafkaspark.core.health.observe import caught_up, end_offsets
        from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
        from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader

        self.wait_batch_after(ref, first_batch + self.setup.after_batches - 1)
        self.producer.stop()
        self.producer.join(180)
        if self.producer.errors or self.producer.acked != self.producer.produced:
            raise RuntimeError(f"{self.source}: {self.producer.acked}/{self.producer.produced}")
        with KafkaFacade({"bootstrap.servers": self.setup.bootstrap}) as kafka:

            def done() -> bool:
                ends = end_offsets(kafka, [self.source])
                return caught_up(CheckpointReader(self.checkpoint).position(), ends)

            _wait(f"{self.name}: caught up", done, self.setup.timeout_s, poll_s=1.0)
        found = [v.decode() for v in stack.read_committed(self.setup.bootstrap, self.sink, 300)]
        return stack.OnceCount.of(self.producer.values, found)

    def close(self) -> None:
        self.producer.stop()
        for ref in self.refs:
            try:
                if self.setup.backend.alive(ref):
                    self.setup.backend.force_kill(ref)
            except Exception as exc:  # noqa: BLE001 - teardown goes on
                stack.log("restart_window_yarn", f"{ref.application_id}: not killed: {exc}")


def _handover_path(setup: Setup, name: str) -> PathRun:
    from airflow_provider_kafkaspark.core.control.reports import StoppedReport
    from airflow_provider_kafkaspark.lifecycle.handover import (
        hand_over,
        submit_standby,
        wait_standby_ready,
    )
    from airflow_provider_kafkaspark.lifecycle.restore import restore_for_submit
    from airflow_provider_kafkaspark.lifecycle.stop import (
        begin_stop,
        check_stop,
        savepoint_after_stop,
    )
    from airflow_provider_kafkaspark.versions import SPARK_VERSION

    job = YarnJob(setup, name)
    try:
        ref = job.start()
        standby: dict[str, Any] | None = None
        warm_s: float | None = None
        if setup.handover == "warm":
            began = time.monotonic()
            standby = submit_standby(setup.backend, job.spec, job.options)
            job._track(standby, time.monotonic() - began)
            wait_standby_ready(standby, setup.timeout_s)
            warm_s = time.monotonic() - began
        t_request = time.time()
        started = begin_stop(
            job.checkpoint,
            requested_by="benchmark:restart_window_yarn",
            reason="restart window",
            drain_timeout_s=120,
            ref=ref,
            at_batch_boundary=True,
        )
        if started is None:
            raise RuntimeError(f"{name}: no live driver to stop")
        deadline = time.monotonic() + started.wait_s
        while (stopped := check_stop(job.checkpoint, started.request.requested_at_ms, ref)) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name}: {ref.application_id} did not stop")
            time.sleep(0.2)
        if not isinstance(stopped, StoppedReport):
            raise RuntimeError(f"{name}: the driver ended before the stop reached it")
        gone = time.time()
        last = -1 if stopped.last_committed_batch is None else stopped.last_committed_batch
        ended = {b.batch_id: _batch_end(b) for b in _progress(job.checkpoint)}
        t0 = ended[last]
        manifest = savepoint_after_stop(
            job.checkpoint, job.savepoints, name, spark_version=SPARK_VERSION
        )
        saved = time.time()
        spec, _restored = restore_for_submit(
            job.spec,
            savepoint_root=job.savepoints,
            savepoint_ref=manifest.savepoint_id,
            mode="checkpoint",
            kafka_config={"bootstrap.servers": setup.bootstrap},
        )
        restored = time.time()
        if standby is not None:
            if hand_over(spec, standby, job.options) is None:
                raise RuntimeError(f"{name}: the standby was gone at the handover")
            new = job.refs[-1]
        else:
            new = job.submit(spec)
        released = time.time()
        first = job.wait_batch_after(new, last)
        t1 = _batch_end(first)
        stopped_at = stopped.stopped_at_ms / 1000
        phases: dict[str, float | None] = {
            "to_stopped_report": stopped_at - t0,
            "exit": gone - stopped_at,
            "savepoint": saved - gone,
            "restore": restored - saved,
            "handover" if standby is not None else "submit": released - restored,
            "start_to_first_batch": t1 - released,
        }
        count = job.finish(new, first.batch_id)
        return PathRun(
            t1 - t0,
            phases,
            count,
            {
                "handover": setup.handover,
                "standby_submit_to_ready_s": None if warm_s is None else round(warm_s, 3),
                "drain_s": round(stopped_at - t_request, 3),
                "stopped_clean": stopped.clean,
                "last_committed_at_stop": last,
                "first_batch_after": first.batch_id,
                "submits": job.submits,
            },
        )
    finally:
        job.close()


def _resubmit_path(setup: Setup, name: str) -> PathRun:
    from airflow_provider_kafkaspark.lifecycle.observe import latest_committed

    job = YarnJob(setup, name)
    try:
        ref = job.start()
        # Right after a batch's end: the kill loses no work in flight (the resubmit's best case).
        seen = _progress(job.checkpoint)[-1].batch_id
        job.wait_batch_after(ref, seen)
        killed_at = time.time()
        setup.backend.force_kill(ref)
        _wait("the application's end", lambda: not setup.backend.alive(ref), 120)
        gone = time.time()
        last = latest_committed(job.checkpoint)
        assert last is not None
        ended = {b.batch_id: _batch_end(b) for b in _progress(job.checkpoint)}
        if last not in ended:
            raise RuntimeError(f"{name}: batch {last} committed but not in progress.json")
        t0 = ended[last]
        new = job.submit(job.spec)
        submitted = time.time()
        first = job.wait_batch_after(new, last)
        t1 = _batch_end(first)
        phases: dict[str, float | None] = {
            "to_kill": killed_at - t0,
            "kill": gone - killed_at,
            "submit": submitted - gone,
            "start_to_first_batch": t1 - submitted,
        }
        count = job.finish(new, first.batch_id)
        return PathRun(
            t1 - t0,
            phases,
            count,
            {
                "last_committed_at_kill": last,
                "first_batch_after": first.batch_id,
                "submits": job.submits,
            },
        )
    finally:
        job.close()


def run(
    rounds: int = 5,
    rate: float = 200.0,
    partitions: int = 3,
    warm_batches: int = 3,
    after_batches: int = 3,
    timeout_s: float = 600.0,
    trigger: str = "5 seconds",
    lease_ttl_s: float = 30.0,
    handover: str = "warm",
) -> dict[str, Any]:
    """`handover`: `warm` (a standby application takes over) or `cold` (the restore submits
    a new application)."""
    from kafkaspark_devstack.kafka import LocalKafkaCluster
    from kafkaspark_devstack.s3 import LocalS3Server
    from kafkaspark_devstack.yarn import LocalYarnCluster

    if handover not in ("warm", "cold"):
        raise ValueError(f"handover must be 'warm' or 'cold', got {handover!r}")
    with tempfile.TemporaryDirectory(prefix="kafkaspark-bench-yarn-rw-") as tmp, ExitStack() as up:
        base = Path(tmp)
        kafka = up.enter_context(LocalKafkaCluster(base / "kafka"))
        s3 = up.enter_context(LocalS3Server(base / "s3"))
        s3.create_bucket(BUCKET)
        aws = s3.aws_environment()
        saved = {k: os.environ.get(k) for k in [*aws, "PATH", f"AIRFLOW_CONN_{CONN_ID.upper()}"]}
        # This process's S3 reads, and the NodeManager's (its localizer reads the staging).
        os.environ.update(aws)
        try:
            yarn = up.enter_context(LocalYarnCluster(base / "yarn", staging_dir=STAGING))
            for key, setting in yarn.client_environment().items():
                saved.setdefault(key, os.environ.get(key))
                os.environ[key] = setting
            os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
            extra = {"deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": yarn.web_url}
            os.environ[f"AIRFLOW_CONN_{CONN_ID.upper()}"] = json.dumps(
                {"conn_type": "spark", "host": "yarn", "extra": extra}
            )
            setup = Setup(
                bootstrap=kafka.bootstrap_servers,
                base=f"s3://{BUCKET}/run",
                rate=rate,
                partitions=partitions,
                warm_batches=warm_batches,
                after_batches=after_batches,
                timeout_s=timeout_s,
                trigger=trigger,
                lease_ttl_s=lease_ttl_s,
                handover=handover,
                backend=YarnBackend(CONN_ID, jars=spark_jars_option(s3a=True)),
                aws=aws,
                workdir=base / "jobs",
            )
            runs, order = alternate(
                "restart_window_yarn",
                rounds,
                {
                    "handover": lambda i: _handover_path(setup, f"yrw-handover-{i}"),
                    "resubmit": lambda i: _resubmit_path(setup, f"yrw-resubmit-{i}"),
                },
            )
            handovers, resubmits = runs["handover"], runs["resubmit"]
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    handover_median = median_s([r.downtime_s for r in handovers])
    resubmit_median = median_s([r.downtime_s for r in resubmits])
    ratio = handover_median / resubmit_median
    submits = [s for r in handovers + resubmits for s in r.extra["submits"]]
    later = [s["jars_uploaded_bytes"] for s in submits[1:]]
    staged = [s["application_staged_bytes"] for s in submits]
    return {
        "rounds": rounds,
        "order": order,
        "rate_per_s": rate,
        "partitions": partitions,
        "trigger_interval": trigger,
        "lease_ttl_s": lease_ttl_s,
        "handover": {"sink": SINK, "handover": handover, **summarize(handovers)},
        "resubmit": {"sink": SINK, **summarize(resubmits)},
        "ratio_handover_to_resubmit": round(ratio, 3),
        "goal_handover_max_s": GOAL_LOCAL_S * GOAL_LOCAL_FACTOR,
        "goal_handover_met": handover_median <= GOAL_LOCAL_S * GOAL_LOCAL_FACTOR,
        "goal_ratio": GOAL_RESUBMIT_RATIO,
        "goal_ratio_met": ratio <= GOAL_RESUBMIT_RATIO,
        "duplicates_total": sum(r.count.duplicates for r in handovers + resubmits),
        "missing_total": sum(r.count.missing for r in handovers + resubmits),
        "jars_uploaded_bytes_first_submit": submits[0]["jars_uploaded_bytes"],
        "jars_uploaded_bytes_later_submits_max": max(later) if later else None,
        "application_staged_bytes_max": max(staged),
        "submits": len(submits),
    }
