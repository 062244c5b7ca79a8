"""Stop with a savepoint and restore, again and again, while records keep arriving.

The stateless variant of the example job (each record copied once, exactly-once sink) is
stopped gracefully, savepointed, restored and resubmitted `profile.restores` times in a row,
alternating `checkpoint` mode (the savepoint's checkpoint copied back) and `offsets` mode (a
fresh checkpoint starting at the savepoint's offsets). The failure this hunts: a restored
reader and a fresh assignment both reading the same partition, or a gap between them. At the
end every produced value must be in the sink exactly once.
"""

from __future__ import annotations

from pathlib import Path

from reliability import stack
from reliability.model import Profile, ScenarioResult

NAME = "repeated_restores"
TITLE = "stop with savepoint and restore, alternating checkpoint and offsets modes"
STORAGES = stack.STORAGES

SOURCE, SINK = "restores_source", "restores_sink"
PARTITIONS = 3
RATE = 300.0
# A cap on the input, not its amount: the scenario stops the producer once the last restored
# job committed a batch; the cap only ends a run that never would.
PRODUCE_CAP_S = 3_600.0


def run(profile: Profile, workdir: Path, storage: str = "local") -> ScenarioResult:
    from airflow_provider_kafkaspark.lifecycle.restore import restore_for_submit
    from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop
    from airflow_provider_kafkaspark.versions import SPARK_VERSION
    from kafkaspark_devstack.kafka import LocalKafkaCluster

    result = ScenarioResult(NAME, TITLE)
    modes: list[str] = []
    backups = 0
    handle = None
    with (
        stack.state_storage(storage, workdir) as state,
        LocalKafkaCluster(workdir / "kafka") as cluster,
    ):
        checkpoint = state.url("checkpoint")
        savepoints = state.url("savepoints")
        bootstrap = cluster.bootstrap_servers
        stack.create_topics(bootstrap, {SOURCE: PARTITIONS, SINK: PARTITIONS})
        spec = stack.passthrough_spec(
            bootstrap=bootstrap,
            checkpoint=checkpoint,
            source=SOURCE,
            sink=SINK,
            job_name="restores",
        )
        producer = stack.SteadyProducer(
            bootstrap, SOURCE, count=10**9, rate=RATE, max_seconds=PRODUCE_CAP_S
        )
        producer.start()
        try:
            handle = stack.submit(spec, workdir / "driver")
            batch = -1
            for i in range(profile.restores):
                mode = "checkpoint" if i % 2 == 0 else "offsets"
                stack.wait_committed_beyond(handle, checkpoint, batch, timeout_s=300)
                batch = stack.stop(handle, NAME)
                handle = None
                manifest = savepoint_after_stop(
                    checkpoint, savepoints, spec.job_name, spark_version=SPARK_VERSION
                )
                restored, summary = restore_for_submit(
                    spec,
                    savepoint_root=savepoints,
                    savepoint_ref=manifest.savepoint_id,
                    mode=mode,
                    kafka_config={"bootstrap.servers": bootstrap},
                )
                backups += 1 if summary.get("backup") else 0
                modes.append(mode)
                result.faults_injected += 1
                stack.log(
                    NAME,
                    f"restore {i + 1} ({mode}) of {manifest.savepoint_id} after batch {batch}; "
                    f"{producer.produced} records produced so far",
                )
                handle = stack.submit(restored, workdir / "driver")
                result.restarts += 1
                # In offsets mode the fresh checkpoint numbers its batches from 0 again.
                batch = -1 if mode == "offsets" else batch
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
        found = [value.decode() for value in stack.read_committed(bootstrap, SINK)]
    count = stack.OnceCount.of(producer.values, found)
    result.records_checked = count.checked
    result.duplicates = count.duplicates
    result.missing = count.missing
    result.check("unexpected_values", count.unexpected == 0, count.unexpected)
    result.check("modes", sorted(set(modes)) == ["checkpoint", "offsets"] or len(modes) < 2, modes)
    # Every restore into a used location kept the old checkpoint aside, never deleted it.
    result.check("backups_kept", backups == len(modes), backups)
    return result
