"""A savepoint taken on Spark 3.5 restores on Spark 4.0 (the upgrade users take), with the
windowed state read back: every window once, counted right. The way back is refused, by the
restore (when the job names its Spark) and by a 3.5 driver itself (when it does not). Real
drivers of both releases: 3.5 from its driver environment (`scripts/driver_env.sh 3.5.7`),
4.0 from this one."""

from __future__ import annotations

import os
from pathlib import Path

import pyspark
import pytest

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import SavepointError
from airflow_provider_kafkaspark.examples.access_events import (
    AccessEvent,
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.examples.ip_count import expected_counts, job_spec_dict
from airflow_provider_kafkaspark.lifecycle.restore import restore_for_submit
from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop, stop_job
from kafkaspark_devstack.drivers import read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic
from tests.integration.runtime_util import start, wait_until
from tests.integration.test_exactly_once import WATERMARK_MS, drained, run_to_the_end, sink_counts

EVENTS = 4_000
OLD, NEW = "3.5.7", "4.0.0"
EXIT_BAD_SPEC = 4


def driver_env_python(version: str) -> str:
    """The interpreter of the driver environment of `version` (made by `make test`)."""
    top = Path(os.environ.get("KAFKASPARK_DRIVER_ENVS_DIR", Path(__file__).parents[2]))
    python = top / f".venv-spark-{version}" / "bin" / "python"
    assert python.exists(), f"{python} is missing: run `bash scripts/driver_env.sh {version}`"
    return str(python)


def on(version: str, raw: dict[str, object]) -> dict[str, object]:
    """The spec run by a driver of `version`: the job names it, and for a release other than
    this environment's, the interpreter that has it."""
    conf = (
        {}
        if version == pyspark.__version__
        else {"spark.pyspark.driver.python": driver_env_python(version)}
    )
    return {**raw, "spark_version": version, "spark_conf": conf}


def test_a_35_savepoint_continues_on_40_and_the_way_back_is_refused(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    assert pyspark.__version__ == NEW, "runs in the Spark 4.0 environment (.venv)"
    bootstrap = kafka_cluster.bootstrap_servers
    source, sink = "upgrade_source", "upgrade_sink"
    events = list(generate_events(EVENTS, seed=35))
    first, second = events[: EVENTS // 2], events[EVENTS // 2 :]
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 3)
    assert produce_events(bootstrap, source, first) == len(first)
    checkpoint, savepoints = str(tmp_path / "checkpoint"), str(tmp_path / "savepoints")
    raw = job_spec_dict(
        bootstrap_servers=bootstrap,
        checkpoint=checkpoint,
        job_name="upgrade",
        source_topic=source,
        sink_topic=sink,
        trigger_interval="1 second",
        max_offsets_per_trigger=1_000,
    )
    kafka = KafkaFacade({"bootstrap.servers": bootstrap})

    # Spark 3.5: the first half, then a stop and a savepoint that says which Spark wrote it.
    old_driver = start(on(OLD, raw), tmp_path / "run-35")
    wait_until(old_driver, "first half read", lambda: drained(kafka, checkpoint, source), 300)
    report = stop_job(checkpoint, requested_by="test", reason="upgrade", drain_timeout_s=60)
    assert report is not None and report.clean, read_log(old_driver)
    assert wait_exit(old_driver, 60) == 0, read_log(old_driver)
    assert f"Spark {OLD}" in read_log(old_driver)
    old_savepoint = savepoint_after_stop(checkpoint, savepoints, "upgrade", spark_version=None)
    assert old_savepoint.spark_version == report.spark_version == OLD

    flush_ms = max(e.event_time_ms for e in events) + 60_000
    flush = AccessEvent("255.255.255.255", flush_ms, "/flush", 200)
    assert produce_events(bootstrap, source, [*second, flush]) == len(second) + 1

    # Spark 4.0: restored from the 3.5 savepoint, state and all, to the end of the input.
    spec, summary = restore_for_submit(
        JobSpec.from_dict(on(NEW, raw)),
        savepoint_root=savepoints,
        savepoint_ref=old_savepoint.savepoint_id,
        mode="checkpoint",
        kafka_config={"bootstrap.servers": bootstrap},
    )
    assert summary["savepoint_id"] == old_savepoint.savepoint_id
    new_driver = run_to_the_end(spec.to_dict(), tmp_path / "run-40", kafka, source)
    assert f"Spark {NEW}" in read_log(new_driver)
    counts, duplicates = sink_counts(bootstrap, sink)
    expected = expected_counts(events, closed_before_ms=flush_ms - WATERMARK_MS)
    assert duplicates == 0
    assert counts == expected, f"missing {len(set(expected) - set(counts))} windows"
    written_by = ControlFolder(checkpoint).read_written_by()
    assert written_by is not None and written_by.spark_version == NEW

    # Back to 3.5: the restore refuses a 4.0 savepoint before it moves anything...
    new_savepoint = savepoint_after_stop(checkpoint, savepoints, "upgrade", spark_version=None)
    assert new_savepoint.spark_version == NEW
    before = sorted(p.name for p in Path(checkpoint).iterdir())
    backups = sorted(tmp_path.glob("checkpoint.backup-*"))  # the 3.5 run's, from the upgrade
    with pytest.raises(SavepointError, match=rf"written by Spark {NEW}.*runs Spark {OLD}"):
        restore_for_submit(
            JobSpec.from_dict(on(OLD, raw)),
            savepoint_root=savepoints,
            savepoint_ref=new_savepoint.savepoint_id,
            mode="checkpoint",
            kafka_config={"bootstrap.servers": bootstrap},
        )
    assert sorted(p.name for p in Path(checkpoint).iterdir()) == before
    assert sorted(tmp_path.glob("checkpoint.backup-*")) == backups, "it moved the checkpoint"

    # ... and a 3.5 driver put on the 4.0 checkpoint without naming its Spark ends for good.
    unnamed = {**on(OLD, raw), "spark_version": None}
    refused = start(unnamed, tmp_path / "run-35-again")
    assert wait_exit(refused, 120) == EXIT_BAD_SPEC, read_log(refused)
    assert f"written by Spark {NEW} and the driver runs Spark {OLD}" in read_log(refused)
    assert written_by == ControlFolder(checkpoint).read_written_by()
