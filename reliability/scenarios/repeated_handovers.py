"""Restart windows with a warm handover, again and again, while records keep arriving.

The stateless variant of the example job (each record copied once, exactly-once sink) runs
`profile.restores` restart windows in a row, each as the restart-window DAG runs it: a
standby driver is submitted and warms up while the running driver still writes, then the
running driver is stopped at the next batch boundary (cutting short a batch Spark already
planned), savepointed, the savepoint restored in checkpoint mode into the checkpoint
location, and the checkpoint handed over to the standby. The failures
this hunts: two drivers writing at once (the standby must not start before the handover and
the lease), a batch planned as the stop ended that is lost or written twice, a standby that was
warm but never started. At the end every produced value must be in the sink exactly once.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from reliability import stack
from reliability.model import Profile, ScenarioResult

NAME = "repeated_handovers"
TITLE = "restart windows with a warm handover to a standby driver"

SOURCE, SINK = "handovers_source", "handovers_sink"
PARTITIONS = 3
RATE = 300.0
PRODUCE_CAP_S = 3_600.0
STANDBY_READY_S = 300.0


def _wait_ready(standby: Any) -> None:
    from kafkaspark_devstack.drivers import read_log

    stack.wait_for(
        f"standby {standby.pid} ready",
        lambda: "standby ready" in read_log(standby) or not pid_alive(standby.pid),
        STANDBY_READY_S,
        0.5,
        done=bool,
    )
    if not pid_alive(standby.pid):
        raise RuntimeError(f"standby {standby.pid} exited:\n{read_log(standby)}")


def run(profile: Profile, workdir: Path) -> ScenarioResult:
    from airflow_provider_kafkaspark.backends.base import SubmitOptions
    from airflow_provider_kafkaspark.backends.local import LocalBackend
    from airflow_provider_kafkaspark.lifecycle.handover import hand_over, submit_standby
    from airflow_provider_kafkaspark.lifecycle.observe import live_lease
    from airflow_provider_kafkaspark.lifecycle.restore import restore_for_submit
    from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop
    from airflow_provider_kafkaspark.versions import SPARK_VERSION
    from kafkaspark_devstack.drivers import driver_ref
    from kafkaspark_devstack.kafka import LocalKafkaCluster

    result = ScenarioResult(NAME, TITLE)
    handovers = 0
    cut_short: list[int] = []
    handles: list[Any] = []
    with LocalKafkaCluster(workdir / "kafka") as cluster:
        checkpoint = str(workdir / "checkpoint")
        savepoints = str(workdir / "savepoints")
        bootstrap = cluster.bootstrap_servers
        stack.create_topics(bootstrap, {SOURCE: PARTITIONS, SINK: PARTITIONS})
        spec = stack.passthrough_spec(
            bootstrap=bootstrap,
            checkpoint=checkpoint,
            source=SOURCE,
            sink=SINK,
            job_name="handovers",
        )
        options = SubmitOptions(workdir=str(workdir / "driver"), submitted_by=NAME)
        producer = stack.SteadyProducer(
            bootstrap, SOURCE, count=10**9, rate=RATE, max_seconds=PRODUCE_CAP_S
        )
        producer.start()
        try:
            handle = stack.submit(spec, workdir / "driver")
            handles.append(handle)
            batch = -1
            for i in range(profile.restores):
                stack.wait_committed_beyond(handle, checkpoint, batch, timeout_s=300)
                raw = submit_standby(LocalBackend(stack.MASTER), spec, options)
                standby = driver_ref(raw)
                handles.append(standby)
                _wait_ready(standby)
                # The standby is warm and waiting: it must not have touched the checkpoint.
                lease = live_lease(checkpoint)
                holder = None if lease is None else lease.pid
                waits = f"standby_{i + 1}_waits_without_the_lease"
                result.check(waits, holder == handle.pid, holder)
                # As the restart-window DAG stops: its restore is in checkpoint mode.
                batch = stack.stop(handle, NAME, at_batch_boundary=True)
                manifest = savepoint_after_stop(
                    checkpoint, savepoints, spec.job_name, spark_version=SPARK_VERSION
                )
                if manifest.pending_batch is not None:
                    cut_short.append(manifest.pending_batch)
                restored, _ = restore_for_submit(
                    spec,
                    savepoint_root=savepoints,
                    savepoint_ref=manifest.savepoint_id,
                    mode="checkpoint",
                    kafka_config={"bootstrap.servers": bootstrap},
                )
                handed = time.monotonic()
                handed_at_ms = int(time.time() * 1000)
                if hand_over(restored, raw, options) is None:
                    raise RuntimeError(f"standby {standby.pid} was gone at handover {i + 1}")
                handovers += 1
                result.faults_injected += 1
                result.restarts += 1
                handle = standby
                stack.wait_committed_beyond(handle, checkpoint, batch, timeout_s=300)
                # Taken at the handover, so fresh from the first moment (not stamped with the
                # standby's start, which looked expired to a health check).
                lease = live_lease(checkpoint)
                taken = None if lease is None else lease.started_at_ms - handed_at_ms
                result.check(
                    f"standby_{i + 1}_lease_taken_at_handover",
                    taken is not None and taken >= 0,
                    taken,
                )
                stack.log(
                    NAME,
                    f"handover {i + 1} after batch {batch}: the standby committed its first "
                    f"batch {time.monotonic() - handed:.1f}s after the handover; "
                    f"{producer.produced} records produced so far",
                )
            result.check(
                "input_flowing_until_handed_over",
                not producer.ended_early,
                producer.ended_by or "running",
            )
            producer.finish(timeout_s=300)
            result.check("producer_errors", not producer.errors, producer.errors[:3])
            stack.wait_caught_up(handle, checkpoint, bootstrap, [SOURCE], timeout_s=600)
            stack.stop(handle, NAME)
        finally:
            producer.stop()
            for started in handles:
                if pid_alive(started.pid):
                    stack.kill(started)
        found = [value.decode() for value in stack.read_committed(bootstrap, SINK)]
    count = stack.OnceCount.of(producer.values, found)
    result.records_checked = count.checked
    result.duplicates = count.duplicates
    result.missing = count.missing
    result.check("unexpected_values", count.unexpected == 0, count.unexpected)
    result.check("every_window_handed_over", handovers == profile.restores, handovers)
    # Not a failure: a batch Spark planned as a stop ended re-runs, once, after the handover.
    result.check("batches_planned_at_a_stop", True, cut_short)
    return result
