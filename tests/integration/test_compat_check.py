"""The upgrade's compatibility check on the real stack: a running stateful job (the ip_count
example, exactly-once sink), and new specs checked against a copy of its state through the
local backend. The same code is compatible; a changed aggregation key and a module that
does not import are not, with Spark's (or Python's) own message; the running job goes on
committing under the same lease throughout, and no copy is left behind."""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.backends.base import SubmitOptions
from airflow_provider_kafkaspark.backends.local import LocalBackend
from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef
from airflow_provider_kafkaspark.core.control.folder import ControlFolder, request_stop
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.examples.access_events import generate_events, produce_events
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from airflow_provider_kafkaspark.lifecycle.compat_check import (
    CompatResult,
    check_compatibility,
    require_compatible,
)
from airflow_provider_kafkaspark.lifecycle.errors import IncompatibleUpgradeError
from kafkaspark_devstack.drivers import read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic
from tests.integration.runtime_util import committed_batches, start, wait_until

log = logging.getLogger(__name__)

# Enough input for the job to be busy (200 records a batch) all through the checks.
EVENTS = 60_000

# The example's aggregation keyed by (window, ip, path) instead of (window, ip): the state's
# key schema changes, which Spark refuses when it reads the old state.
REKEYED = """
from pyspark.sql import functions as F

from airflow_provider_kafkaspark.examples.ip_count import EVENT_SCHEMA, WATERMARK


def transform(source):
    events = source.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"))
    counted = (
        events.select("e.ip", "e.path", (F.col("e.ts") / 1000).cast("timestamp").alias("t"))
        .withWatermark("t", WATERMARK)
        .groupBy(F.window("t", "5 seconds"), "ip", "path")
        .count()
    )
    return counted.select(F.col("ip").alias("key"), F.col("path").alias("value"))
"""

BROKEN = """
import a_module_nobody_ships  # noqa: F401


def transform(source):
    return source
"""


@dataclass
class Running:
    raw: dict[str, object]
    driver: LocalJobRef
    checkpoint: str
    owner: str
    base: Path


@pytest.fixture(scope="module")
def running(
    kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Running]:
    base = tmp_path_factory.mktemp("compat")
    bootstrap = kafka_cluster.bootstrap_servers
    source, sink = "compat_source", "compat_sink"
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 2)
    events = list(generate_events(EVENTS, seed=30))
    assert produce_events(bootstrap, source, events) == len(events)
    checkpoint = str(base / "checkpoint")
    raw = job_spec_dict(
        bootstrap_servers=bootstrap,
        checkpoint=checkpoint,
        job_name="compat",
        source_topic=source,
        sink_topic=sink,
        trigger_interval="1 second",
        max_offsets_per_trigger=200,
    )
    driver = start(raw, base / "run")
    try:
        wait_until(driver, "two committed batches", lambda: committed_batches(checkpoint) >= 1)
        lease = ControlFolder(checkpoint).read_lease()
        assert lease is not None
        yield Running(raw, driver, checkpoint, lease.owner_id, base)
    finally:
        request_stop(checkpoint, requested_by="test")
        code = wait_exit(driver, 180)
        assert code == 0, read_log(driver)


def check(running: Running, name: str, **changes: object) -> CompatResult:
    spec = JobSpec.from_dict({**running.raw, **changes})
    before = committed_batches(running.checkpoint)
    result = check_compatibility(
        LocalBackend("local[2]"),
        spec,
        SubmitOptions(workdir=str(running.base / f"check-{name}")),
        timeout_s=300,
    )
    # The measured time, in the test's output (`-s`) and its log.
    log.info("compatibility check %s: %s", name, result.to_dict())
    print(f"compatibility check {name}: {result.to_dict()}")
    # The running job was not touched: same lease owner, still committing.
    lease = ControlFolder(running.checkpoint).read_lease()
    assert lease is not None and lease.owner_id == running.owner
    wait_until(
        running.driver,
        "the running job to commit another batch",
        lambda: committed_batches(running.checkpoint) > max(before, result.batch or 0),
    )
    # The copy beside the checkpoint is gone.
    leftovers = [p.name for p in Path(running.checkpoint).parent.iterdir() if ".compat-" in p.name]
    assert leftovers == []
    return result


def module_folder(running: Running, name: str, text: str) -> str:
    folder = running.base / f"code-{name}"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(textwrap.dedent(text))
    return str(folder)


def test_the_same_code_is_compatible(running: Running) -> None:
    result = check(running, "same")
    assert result.compatible and not result.skipped, result
    assert result.batch is not None and result.batch >= 1
    assert result.old_operators == result.new_operators == (0,)
    assert 0 < result.seconds < 300
    assert require_compatible(result) is result


def test_a_changed_state_key_is_incompatible_with_sparks_message(running: Running) -> None:
    folder = module_folder(running, "compat_rekeyed", REKEYED)
    result = check(
        running,
        "rekeyed",
        transformation="compat_rekeyed:transform",
        python_path=[folder],
    )
    assert not result.compatible and not result.skipped, result
    assert "schema" in result.reason.lower(), result.reason
    with pytest.raises(IncompatibleUpgradeError, match="incompatible"):
        require_compatible(result)


def test_a_module_that_does_not_import_is_incompatible(running: Running) -> None:
    folder = module_folder(running, "compat_broken", BROKEN)
    result = check(
        running,
        "broken",
        transformation="compat_broken:transform",
        python_path=[folder],
    )
    assert not result.compatible, result
    assert "a_module_nobody_ships" in result.reason, result.reason
    assert "ModuleNotFoundError" in result.reason, result.reason
