"""Partitions added to the source topic while the job runs, and while it is stopped.

The stateless job reads a 2-partition topic fed at a steady rate; the producer writes to
every partition the topic has, re-reading the count each second. The topic grows to 4
partitions while the job runs, then the job is stopped with a savepoint, the topic grows to
6, and the job is restored (checkpoint mode) and resubmitted. Every record of every
partition, old and new, must reach the sink exactly once, and the checkpoint must end at the
end of every partition.
"""

from __future__ import annotations

from pathlib import Path

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive
from reliability import stack
from reliability.model import Profile, ScenarioResult

NAME = "partitions_added"
TITLE = "source partitions added while running and while stopped"
STORAGES = stack.STORAGES

SOURCE, SINK = "grow_source", "grow_sink"
RATE = 300.0
# A cap on the input, not its amount: the scenario stops the producer once the restored job
# committed a batch; the cap only ends a run that never would.
PRODUCE_CAP_S = 3_600.0


def _committed_offsets(checkpoint: str) -> dict[int, int]:
    from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader

    offsets = CheckpointReader(checkpoint).position().committed_offsets
    return {int(p): o for p, o in offsets.get(SOURCE, {}).items()}


def run(profile: Profile, workdir: Path, storage: str = "local") -> ScenarioResult:
    from airflow_provider_kafkaspark.core.health.observe import end_offsets
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.lifecycle.restore import restore_for_submit
    from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop
    from airflow_provider_kafkaspark.versions import SPARK_VERSION
    from kafkaspark_devstack.kafka import LocalKafkaCluster

    result = ScenarioResult(NAME, TITLE)
    handle = None
    with (
        stack.state_storage(storage, workdir) as state,
        LocalKafkaCluster(workdir / "kafka") as cluster,
    ):
        checkpoint = state.url("checkpoint")
        savepoints = state.url("savepoints")
        bootstrap = cluster.bootstrap_servers
        stack.create_topics(bootstrap, {SOURCE: 2, SINK: 3})
        spec = stack.passthrough_spec(
            bootstrap=bootstrap, checkpoint=checkpoint, source=SOURCE, sink=SINK, job_name="grow"
        )
        producer = stack.SteadyProducer(
            bootstrap, SOURCE, count=10**9, rate=RATE, max_seconds=PRODUCE_CAP_S
        )
        producer.start()
        try:
            handle = stack.submit(spec, workdir / "driver")
            batch = stack.wait_committed_beyond(handle, checkpoint, -1, timeout_s=300)
            stack.add_partitions(bootstrap, SOURCE, 4)
            result.faults_injected += 1
            stack.log(NAME, f"source grown to 4 partitions after batch {batch}, job running")

            running = handle

            def committed_offsets() -> dict[int, int]:
                if not pid_alive(running.pid):
                    raise RuntimeError(f"driver {running.pid} exited")
                return _committed_offsets(checkpoint)

            stack.wait_for(
                "the job to commit offsets in partitions 2 and 3 (committed offsets shown)",
                committed_offsets,
                180,
                done=lambda offsets: all(offsets.get(p, 0) > 0 for p in (2, 3)),
            )
            batch = stack.stop(handle, NAME)
            handle = None
            manifest = savepoint_after_stop(
                checkpoint, savepoints, spec.job_name, spark_version=SPARK_VERSION
            )
            stack.add_partitions(bootstrap, SOURCE, 6)
            result.faults_injected += 1
            stack.log(NAME, f"stopped after batch {batch}; source grown to 6 partitions")
            # Let records land in the new partitions while the job is down.
            stack.wait_for(
                f"{2 * RATE // 6:g} records in partitions 4 and 5 (records there shown)",
                lambda: _new_partition_ends(bootstrap, (4, 5)),
                120,
                done=lambda records: records >= 2 * RATE // 6,
            )
            restored, summary = restore_for_submit(
                spec,
                savepoint_root=savepoints,
                savepoint_ref=manifest.savepoint_id,
                mode="checkpoint",
                kafka_config={"bootstrap.servers": bootstrap},
            )
            result.check("reconcile_before_restore", True, summary.get("reconcile"))
            handle = stack.submit(restored, workdir / "driver")
            result.restarts += 1
            stack.wait_committed_beyond(handle, checkpoint, batch, timeout_s=300)
            result.check(
                "input_flowing_until_restored",
                not producer.ended_early,
                producer.ended_by or "running",
            )
            producer.finish(timeout_s=300)
            result.check("producer_errors", not producer.errors, producer.errors[:3])
            stack.wait_caught_up(handle, checkpoint, bootstrap, [SOURCE], timeout_s=600)
            stack.stop(handle, NAME)
            handle = None
        finally:
            producer.stop()
            if handle is not None:
                stack.kill(handle)
        with KafkaFacade({"bootstrap.servers": bootstrap}) as kafka:
            ends = {int(p): o for p, o in end_offsets(kafka, [SOURCE])[SOURCE].items()}
        found = [value.decode() for value in stack.read_committed(bootstrap, SINK)]
        committed = _committed_offsets(checkpoint)
    count = stack.OnceCount.of(producer.values, found)
    result.records_checked = count.checked
    result.duplicates = count.duplicates
    result.missing = count.missing
    result.check("unexpected_values", count.unexpected == 0, count.unexpected)
    result.check("source_records", sum(ends.values()) == count.checked, sum(ends.values()))
    added_running = sum(ends.get(p, 0) for p in (2, 3))
    added_stopped = sum(ends.get(p, 0) for p in (4, 5))
    result.check("records_in_partitions_added_running", added_running > 0, added_running)
    result.check("records_in_partitions_added_stopped", added_stopped > 0, added_stopped)
    result.check("checkpoint_at_end_of_every_partition", committed == ends, committed)
    return result


def _new_partition_ends(bootstrap: str, partitions: tuple[int, ...]) -> int:
    from airflow_provider_kafkaspark.core.health.observe import end_offsets
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade

    with KafkaFacade({"bootstrap.servers": bootstrap}) as kafka:
        ends = end_offsets(kafka, [SOURCE]).get(SOURCE, {})
    return sum(int(ends.get(p, 0)) for p in partitions)
