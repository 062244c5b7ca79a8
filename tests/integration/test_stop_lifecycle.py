"""Stop, savepoint and start on the real stack: a clean stopped report frees the checkpoint at
once (no pid needed), a stop issued while the driver starts waits for it, and a bad job ends
for good with its reason in the control folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pyspark
import pytest

from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef
from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import LeaseHeldError
from airflow_provider_kafkaspark.lifecycle.stop import savepoint_after_stop, stop_job
from kafkaspark_devstack.drivers import driver_ref, submit_local, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from reliability.stack import dump_stacks
from tests.integration.kafka_util import create_topic, produce_numbered
from tests.integration.runtime_util import committed_batches, wait_until

# CI runs 5 rounds; `make soak` runs 20 (KAFKASPARK_STOP_ROUNDS), as the race was first seen
# 2 times in 3 and each round costs a driver start.
ROUNDS = int(os.environ.get("KAFKASPARK_STOP_ROUNDS", "5"))


def parquet_spec(bootstrap: str, topic: str, base: Path, name: str) -> dict[str, Any]:
    return {
        "job_name": name,
        "source": {"bootstrap_servers": bootstrap, "subscribe": [topic]},
        "sql": "SELECT partition, offset, CAST(value AS STRING) AS value FROM source",
        "sink": {"kind": "parquet", "path": str(base / "out")},
        "checkpoint_location": str(base / "checkpoint"),
        "trigger_interval": "1 second",
        "lease_ttl_s": 30,
    }


def test_stop_then_savepoint_at_once_round_after_round(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real drivers, stopped through the control folder without a pid (as the example restart
    window does), and a savepoint taken the moment the stopped report is there: the driver
    writes the report before it drops the lease, so the savepoint is never refused.

    The spec's paths are relative to the submitter's folder, as a DAG author may write them;
    the driver runs in a folder of its own and still writes where they point."""
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, "stop_race", 1)
    monkeypatch.chdir(tmp_path)
    raw = parquet_spec(bootstrap, "stop_race", Path("."), "stop_race")
    spec = JobSpec.from_dict(raw)
    assert not Path(spec.checkpoint_location).is_absolute()
    checkpoint = spec.checkpoint_location
    savepoints = "savepoints"
    refusals: list[str] = []
    for round_no in range(ROUNDS):
        before = committed_batches(checkpoint)
        produce_numbered(bootstrap, "stop_race", 20, start=round_no * 20)
        handle = submit_local(spec, "drivers", master="local[1]", restart_policy=None)
        assert handle["pid_role"] == "driver"
        driver = driver_ref(handle)
        wait_until(driver, f"round {round_no}: a new batch", partial(advanced, checkpoint, before))
        assert os.readlink(f"/proc/{driver.pid}/cwd") == driver.work_dir
        assert Path(driver.work_dir).parent == tmp_path / "drivers"
        if round_no == 0:
            assert_stacks_can_be_dumped(driver)
        # Polled as often as the file system allows: the savepoint follows the report at once.
        report = stop_job(
            checkpoint,
            requested_by="test",
            reason=f"round {round_no}",
            drain_timeout_s=60,
            poll_s=0.02,
        )
        assert report is not None and report.exit_code in (0, 2), report
        try:
            manifest = savepoint_after_stop(checkpoint, savepoints, "stop_race", spark_version=None)
        except LeaseHeldError as exc:
            refusals.append(f"round {round_no}: {exc}")
        else:
            # The driver's Spark, from its stopped report, not the caller's (None here).
            assert manifest.spark_version == report.spark_version == pyspark.__version__
        assert wait_exit(driver, 60) in (0, 2), Path(driver.log_file).read_text()[-3000:]
    assert refusals == []
    assert len(list(Path(savepoints).glob("stop_race-*"))) == ROUNDS
    assert list((tmp_path / "out").glob("*.parquet")), "the relative sink path got no output"
    # Nothing of Spark's in the submitter's folder: it stays in the drivers' work folders.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint",
        "drivers",
        "out",
        "savepoints",
    ]


def test_a_stop_issued_while_the_driver_starts_waits_for_it(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, "stop_early", 1)
    produce_numbered(bootstrap, "stop_early", 100)
    spec = JobSpec.from_dict(parquet_spec(bootstrap, "stop_early", tmp_path, "stop_early"))
    handle = submit_local(spec, str(tmp_path / "drivers"), master="local[2]", restart_policy=None)
    # No pid given, and no driver holds the lease yet: the submitted marker says one is coming.
    assert ControlFolder(spec.checkpoint_location).read_lease() is None
    report = stop_job(
        spec.checkpoint_location, requested_by="test", reason="right away", drain_timeout_s=60
    )
    assert report is not None, "the stop found nothing to stop"
    assert report.reason == "stop request by test: right away"
    assert wait_exit(driver_ref(handle), 60) in (0, 2)


def assert_stacks_can_be_dumped(driver: LocalJobRef) -> None:
    """What the reliability harness does when a driver stalls: the JVM's threads go to a
    file, the runner's Python threads (SIGUSR1) to the driver log."""
    where = dump_stacks(driver)
    dumps = Path(driver.log_file).with_suffix(".threads.txt")
    assert str(dumps) in where
    assert "Full thread dump" in dumps.read_text()
    wait_until(
        driver,
        "the runner's Python stacks in the driver log",
        lambda: "most recent call first" in Path(driver.log_file).read_text(),
    )


def advanced(checkpoint: str, before: int) -> bool:
    return committed_batches(checkpoint) > before


@pytest.mark.airflow
@pytest.mark.parametrize("fault", ["import_error", "missing_sink_topic"])
def test_a_bad_job_ends_for_good_and_says_why(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, fault: str
) -> None:
    from airflow_provider_kafkaspark.core.control.lease import now_ms
    from airflow_provider_kafkaspark.core.health.watch import HealthWatch
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.triggers.health import read_watch_inputs

    bootstrap = kafka_cluster.bootstrap_servers
    topic = f"bad_job_{fault}"
    create_topic(bootstrap, topic, 1)
    produce_numbered(bootstrap, topic, 10)
    raw = parquet_spec(bootstrap, topic, tmp_path, f"bad-{fault}".replace("_", "-"))
    if fault == "import_error":
        code = tmp_path / "code"
        code.mkdir()
        (code / "broken_job.py").write_text("import kafkaspark_no_such_dependency  # noqa\n")
        raw.pop("sql")
        raw.update(transformation="broken_job:transform", python_path=[str(code)])
        expected = "No module named 'kafkaspark_no_such_dependency'"
    else:
        raw["sink"] = {"kind": "kafka_exactly_once", "topic": "no_such_sink_topic"}
        raw["sql"] = "SELECT CAST(value AS STRING) AS value FROM source"
        expected = "'no_such_sink_topic' does not exist"
    spec = JobSpec.from_dict(raw)
    since = now_ms()
    handle = submit_local(
        spec,
        str(tmp_path / "drivers"),
        master="local[2]",
        restart_policy=RestartPolicy(max_restarts=3, backoff_s=1),
    )
    assert handle["pid_role"] == "supervisor"
    driver = driver_ref(handle)
    exit_code = wait_exit(driver, 180)
    log = Path(driver.log_file).read_text()
    assert exit_code == 4, log[-3000:]
    control = ControlFolder(spec.checkpoint_location)
    stopped = control.read_stopped()
    assert stopped is not None and stopped.reason == "bad job" and stopped.exit_code == 4
    assert expected in stopped.message
    supervisor = control.read_supervisor()
    assert supervisor is not None and supervisor.attempt == 1 and supervisor.ended, supervisor
    # What a health sensor decides at its first look: failed, naming the cause and the log.
    watch = HealthWatch(since_batch=None, min_new_batches=1, window_ms=30_000, since_ms=since)
    with KafkaFacade({"bootstrap.servers": bootstrap}) as kafka:
        decision = read_watch_inputs(spec.checkpoint_location, kafka).decide(watch, now_ms())
    assert decision.state == "failed" and expected in decision.reason
    assert driver.log_file in decision.reason
    # What a person sees at a terminal: the reason and where the driver's log is.
    kafkaspark = str(Path(sys.executable).parent / "kafkaspark")
    shown = subprocess.run(
        [kafkaspark, "checkpoint", "inspect", spec.checkpoint_location, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    inspected = json.loads(shown.stdout)
    assert inspected["stopped"]["exit_code"] == 4 and expected in inspected["stopped"]["message"]
    assert inspected["driver_log"] == driver.log_file
