"""The upgrade's compatibility check on the real stack: a running stateful job (the ip_count
example, exactly-once sink), and new specs checked against a copy of its state through the
local backend, with the checkpoint on local disk and on the local S3 server. The same code is
compatible; a changed aggregation key and a module that does not import are not, with Spark's
(or Python's) own message; the running job goes on committing under the same lease
throughout, and no copy is left behind: nothing named `<checkpoint>.compat-*` beside the
checkpoint right after the verdict, nor once the running job has committed again. Issue 44:
on S3 every check's prefix stayed listed beside the checkpoint (the local S3 server keeps the
folders of an emptied prefix, and s3fs's listing of one shows it as one entry)."""

from __future__ import annotations

import json
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
from airflow_provider_kafkaspark.core.storage.location import Location, open_location
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
from tests.conftest import S3_BUCKET, s3_env
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
    # The storage's AWS variables, for the check's driver as a deploy gives them (none on disk).
    env: dict[str, str]


@pytest.fixture(scope="module", params=["local", "s3"])
def running(
    request: pytest.FixtureRequest,
    kafka_cluster: LocalKafkaCluster,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Running]:
    storage = str(request.param)
    base = tmp_path_factory.mktemp(f"compat-{storage}")
    with pytest.MonkeyPatch.context() as patch:
        env: dict[str, str] = {}
        root = str(base)
        if storage == "s3":
            env = s3_env(request.getfixturevalue("s3_server"))
            for key, value in env.items():
                patch.setenv(key, value)  # this process's own reads and copies of the state
            root = f"s3://{S3_BUCKET}/{base.name}"
        yield from _running_job(kafka_cluster, base, f"{root}/checkpoint", storage, env)


def _running_job(
    kafka_cluster: LocalKafkaCluster, base: Path, checkpoint: str, storage: str, env: dict[str, str]
) -> Iterator[Running]:
    bootstrap = kafka_cluster.bootstrap_servers
    source, sink = f"compat_source_{storage}", f"compat_sink_{storage}"
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 2)
    events = list(generate_events(EVENTS, seed=30))
    assert produce_events(bootstrap, source, events) == len(events)
    raw = job_spec_dict(
        bootstrap_servers=bootstrap,
        checkpoint=checkpoint,
        job_name="compat",
        source_topic=source,
        sink_topic=sink,
        trigger_interval="1 second",
        max_offsets_per_trigger=200,
    )
    driver = start(raw, base / "run", env)
    try:
        wait_until(driver, "two committed batches", lambda: committed_batches(checkpoint) >= 1)
        lease = ControlFolder(checkpoint).read_lease()
        assert lease is not None
        yield Running(raw, driver, checkpoint, lease.owner_id, base, env)
    finally:
        request_stop(checkpoint, requested_by="test")
        code = wait_exit(driver, 180)
        assert code == 0, read_log(driver)


def compat_leftovers(checkpoint: str) -> list[str]:
    """What is beside `checkpoint` under a name holding `.compat-` (a check's copy), relative
    to the checkpoint's parent. On local disk: each such entry and every path under it. On S3,
    as the store itself lists them (not a file system's view): the parent's folder listing
    (what `aws s3 ls` shows beside the checkpoint: a prefix stays listed while the store keeps
    a folder for it, as SeaweedFS does for an emptied one) and every object under such a name,
    S3A's empty `folder/` markers included."""
    parent = checkpoint.rstrip("/").rsplit("/", 1)[0]
    location = open_location(parent)
    if location.on_local_disk:
        found: list[str] = []
        for entry in Path(parent).iterdir():
            if ".compat-" in entry.name:
                found.append(entry.name)
                found.extend(str(p.relative_to(parent)) for p in entry.rglob("*"))
        return sorted(found)
    listed = [*_listed(location, delimiter="/"), *_listed(location, delimiter="")]
    return sorted({name for name in listed if ".compat-" in name.split("/", 1)[0]})


def _listed(location: Location, delimiter: str) -> Iterator[str]:
    """The names the store lists under `location` (relative to it), page by page: with a
    delimiter its folder listing (objects and prefixes one level down), without it every
    object at any depth."""
    bucket, _, key = location.root.partition("/")
    prefix = key.rstrip("/") + "/"
    token: dict[str, str] = {"Delimiter": delimiter} if delimiter else {}
    for _page in range(1000):
        answer = location.fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=prefix, **token)
        for item in answer.get("Contents", []):
            yield str(item["Key"])[len(prefix) :]
        for folder in answer.get("CommonPrefixes", []):
            yield str(folder["Prefix"])[len(prefix) :]
        if not answer.get("IsTruncated"):
            return
        token = {**token, "ContinuationToken": answer["NextContinuationToken"]}
    raise AssertionError(f"{location.url}: more than 1000 pages listed")


def check_copy(running: Running, name: str) -> str:
    """Where the check `name` made its copy: its driver's checkpoint, from its spec file."""
    (spec_file,) = (running.base / f"check-{name}").glob("*.spec.json")
    return str(json.loads(spec_file.read_text())["checkpoint_location"])


def check(running: Running, name: str, **changes: object) -> CompatResult:
    spec = JobSpec.from_dict({**running.raw, **changes})
    before = committed_batches(running.checkpoint)
    result = check_compatibility(
        LocalBackend("local[2]"),
        spec,
        SubmitOptions(workdir=str(running.base / f"check-{name}"), env=running.env),
        timeout_s=300,
    )
    # Right after the verdict, the copy beside the checkpoint is gone, all of it.
    copy = check_copy(running, name)
    assert copy.startswith(running.checkpoint + ".compat-"), copy
    assert compat_leftovers(running.checkpoint) == [], f"left of the check's copy {copy}"
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
    # And nothing came back since: no late write of the check's driver (its process, its
    # threads, its JVM on shutdown) recreated any of it.
    assert compat_leftovers(running.checkpoint) == [], f"came back in the check's copy {copy}"
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
