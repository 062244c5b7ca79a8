"""Deployments on the real local stack: a first deploy, a no-op, upgrades in each mode with
the exactly-once sink (read back by a read_committed reader), and an unhealthy upgrade rolled
back automatically with its code as it was deployed (state on S3)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.backends import deployment_backend
from airflow_provider_kafkaspark.backends.base import SubmitOptions
from airflow_provider_kafkaspark.core.control.folder import ControlFolder, request_stop
from airflow_provider_kafkaspark.core.deploy.deployment import DeploymentStatus, UpgradeMode
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.errors import DeploymentRefusedError, UpgradeRolledBackError
from airflow_provider_kafkaspark.examples.access_events import (
    AccessEvent,
    generate_events,
    produce_events,
)
from airflow_provider_kafkaspark.examples.ip_count import expected_counts, job_spec_dict
from airflow_provider_kafkaspark.lifecycle.deploy import (
    DeployPolicy,
    DeployRequest,
    deploy_job,
    deployment_status,
)
from airflow_provider_kafkaspark.lifecycle.observe import live_lease
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic
from tests.integration.runtime_util import wait_until
from tests.integration.test_compat_check import REKEYED
from tests.integration.test_exactly_once import WATERMARK_MS, drained, sink_counts

EVENTS = 4_500
GOOD = "from airflow_provider_kafkaspark.examples.ip_count import transform  # {tag}\n"
BAD = "def transform(frame):\n    raise RuntimeError('this release is broken')\n"
Deploy = Callable[..., dict[str, Any]]


def code(folder: Path, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ipjob.py").write_text(text)
    return str(folder)


def deployer(
    bootstrap: str, checkpoint: str, savepoints: str, source: str, sink: str, workdir: Path
) -> Deploy:
    """deploy(code_folder, mode, **policy): one deploy of the ip_count job with the
    transformation `ipjob:transform` from `code_folder`."""
    backend = deployment_backend("local[2]")
    raw = job_spec_dict(
        bootstrap_servers=bootstrap,
        checkpoint=checkpoint,
        job_name="deployed",
        source_topic=source,
        sink_topic=sink,
        trigger_interval="1 second",
        max_offsets_per_trigger=1_000,
    )

    def deploy(folder: str, mode: UpgradeMode, **policy: Any) -> dict[str, Any]:
        given = JobSpec.from_dict(
            {**raw, "transformation": "ipjob:transform", "python_path": [folder]}
        )
        request = DeployRequest(
            spec=given,
            given=given,
            kafka_client={"bootstrap.servers": bootstrap},
            options=SubmitOptions(workdir=str(workdir), submitted_by="test"),
            policy=DeployPolicy(
                upgrade_mode=mode, savepoint_root=savepoints, health_timeout_s=240, **policy
            ),
            by="test:deploy",
        )
        return deploy_job(backend, request)

    return deploy


def deployment_of(
    bootstrap: str, base: str, tmp_path: Path, name: str
) -> tuple[Deploy, str, str, str]:
    """A deployer for a job of its own: (deploy, checkpoint, source topic, sink topic), its
    state under `base` (a folder or an S3 URL)."""
    source, sink = f"{name}_source", f"{name}_sink"
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 3)
    checkpoint = f"{base}/checkpoint"
    deploy = deployer(bootstrap, checkpoint, f"{base}/sp", source, sink, tmp_path / "w")
    return deploy, checkpoint, source, sink


def committed(checkpoint: str) -> int:
    batch = CheckpointReader(checkpoint).position().latest_committed
    return -1 if batch is None else batch


class Trickle:
    """Produces events in small chunks while a deploy runs: the job always has input, so the
    gap in its commits across the upgrade is the upgrade's downtime."""

    def __init__(self, bootstrap: str, topic: str, events: list[AccessEvent]) -> None:
        self._args = (bootstrap, topic, events)
        self._thread = threading.Thread(target=self._produce, daemon=True)

    def _produce(self) -> None:
        bootstrap, topic, events = self._args
        for i in range(0, len(events), 50):
            produce_events(bootstrap, topic, events[i : i + 50])
            time.sleep(0.8)

    def __enter__(self) -> Trickle:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join(120)


def commit_times(checkpoint: str | Path) -> dict[int, float]:
    folder = Path(checkpoint) / "commits"
    return {int(p.name): p.stat().st_mtime for p in folder.iterdir() if p.name.isdigit()}


def newest_backup(checkpoint: str) -> Path:
    path = Path(checkpoint)
    return max(path.parent.glob(path.name + ".backup-*"))


def commit_gap_s(old: dict[int, float], new: dict[int, float], last_old: int, fresh: bool) -> float:
    """From the old driver's last commit (batch `last_old`) to the new driver's first (local
    disk: commit files' times; a restore moves the old checkpoint aside with them). `fresh`:
    the new driver started a checkpoint of its own, numbered from 0."""
    first_new = min(t for batch, t in new.items() if fresh or batch > last_old)
    return round(first_new - old[last_old], 1)


def stop_when_drained(checkpoint: str, kafka: KafkaFacade, source: str) -> None:
    wait_until(None, "all input read", lambda: drained(kafka, checkpoint, source), 300)
    request_stop(checkpoint, requested_by="test")
    wait_until(None, "the driver stopped", lambda: live_lease(checkpoint) is None, 180)


def test_deploy_noop_and_upgrades_with_and_without_a_savepoint_lose_and_repeat_nothing(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    deploy, checkpoint, source, sink = deployment_of(bootstrap, str(tmp_path), tmp_path, "deploy")
    events = list(generate_events(EVENTS, seed=41))
    parts = [events[i * EVENTS // 4 : (i + 1) * EVENTS // 4] for i in range(4)]
    kafka = KafkaFacade({"bootstrap.servers": bootstrap})

    produce_events(bootstrap, source, parts[0])
    first = deploy(code(tmp_path / "v1", GOOD.format(tag="v1")), UpgradeMode.SAVEPOINT)
    assert (first["action"], first["status"]) == ("submit", "STABLE"), first
    again = deploy(code(tmp_path / "v1", GOOD.format(tag="v1")), UpgradeMode.SAVEPOINT)
    assert (again["action"], again["spec_hash"]) == ("noop", first["spec_hash"]), again
    lease = live_lease(checkpoint)

    # The same code in another folder is the same spec; edited, it is a new one.
    with Trickle(bootstrap, source, parts[1]):
        upgraded = deploy(code(tmp_path / "v2", GOOD.format(tag="v2")), UpgradeMode.SAVEPOINT)
    assert (upgraded["action"], upgraded["status"]) == ("upgrade", "STABLE"), upgraded
    assert upgraded["spec_hash"] != first["spec_hash"]
    record = upgraded["deployment"]
    assert record["stable_hash"] == upgraded["spec_hash"] and record["stable_savepoint"]
    new_lease = live_lease(checkpoint)
    assert lease is not None and new_lease is not None and new_lease.owner_id != lease.owner_id
    old = commit_times(newest_backup(checkpoint))
    gap = commit_gap_s(old, commit_times(checkpoint), max(old), fresh=False)
    figures = {"savepoint": {**upgraded["timings"], "downtime_s": gap}}

    # New code that keys the state differently: the check refuses it; the old job runs on.
    batch = committed(checkpoint)
    with pytest.raises(DeploymentRefusedError, match="cannot continue") as refused:
        deploy(code(tmp_path / "rekeyed", REKEYED), UpgradeMode.SAVEPOINT)
    assert "SCHEMA" in str(refused.value) and "was not touched" in str(refused.value)
    still = live_lease(checkpoint)
    assert still is not None and still.owner_id == new_lease.owner_id
    assert deployment_status(checkpoint).status is DeploymentStatus.STABLE  # type: ignore[union-attr]

    produce_events(bootstrap, source, parts[2])
    wait_until(None, "the old job commits on", lambda: committed(checkpoint) > batch, 180)
    with Trickle(bootstrap, source, parts[3]):
        last = deploy(code(tmp_path / "v3", GOOD.format(tag="v3")), UpgradeMode.LAST_STATE)
    assert (last["action"], last["status"]) == ("upgrade", "STABLE"), last
    assert last["deployment"]["stable_savepoint"] is None  # last-state takes none
    times = commit_times(checkpoint)
    gap = commit_gap_s(times, times, last["since_batch"], fresh=False)
    figures["last-state"] = {**last["timings"], "downtime_s": gap}
    print("DEPLOY_FIGURES", json.dumps(figures))

    flush_ms = max(e.event_time_ms for e in events) + 60_000
    produce_events(bootstrap, source, [AccessEvent("255.255.255.255", flush_ms, "/flush", 200)])
    stop_when_drained(checkpoint, kafka, source)
    counts, duplicates = sink_counts(bootstrap, sink)
    expected = expected_counts(events, closed_before_ms=flush_ms - WATERMARK_MS)
    assert duplicates == 0
    assert counts == expected, f"missing {len(set(expected) - set(counts))} windows"
    history = [t["status"] for t in deployment_status(checkpoint).summary()["history"]]  # type: ignore[union-attr]
    assert history[-3:] == ["UPGRADING", "UPGRADING", "STABLE"], history
    assert "STABLE" in history[-6:-3] and "UPGRADING" in history[-6:-3]  # the refused one


def test_a_stateless_upgrade_keeps_kafka_positions_and_starts_state_afresh(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    deploy, checkpoint, source, sink = deployment_of(
        bootstrap, str(tmp_path), tmp_path, "stateless"
    )
    events = list(generate_events(3_000, seed=43))
    kafka = KafkaFacade({"bootstrap.servers": bootstrap})

    produce_events(bootstrap, source, events[:1_500])
    assert (
        deploy(code(tmp_path / "v1", GOOD.format(tag="v1")), UpgradeMode.STATELESS)["status"]
        == "STABLE"
    )
    wait_until(None, "first half read", lambda: drained(kafka, checkpoint, source), 300)
    with Trickle(bootstrap, source, events[1_500:2_000]):
        upgraded = deploy(code(tmp_path / "v2", GOOD.format(tag="v2")), UpgradeMode.STATELESS)
    assert (upgraded["action"], upgraded["status"]) == ("upgrade", "STABLE"), upgraded
    old = commit_times(newest_backup(checkpoint))
    gap = commit_gap_s(old, commit_times(checkpoint), max(old), fresh=True)
    figures = {"stateless": {**upgraded["timings"], "downtime_s": gap}}
    print("DEPLOY_FIGURES", json.dumps(figures))
    backups = list(tmp_path.glob("checkpoint.backup-*"))
    assert backups, "the old state is kept aside, not deleted"

    produce_events(bootstrap, source, events[2_000:])
    flush_ms = max(e.event_time_ms for e in events) + 60_000
    produce_events(bootstrap, source, [AccessEvent("255.255.255.255", flush_ms, "/flush", 200)])
    stop_when_drained(checkpoint, kafka, source)
    counts, duplicates = sink_counts(bootstrap, sink)
    expected = expected_counts(events, closed_before_ms=flush_ms - WATERMARK_MS)
    # No record is read twice: Kafka positions carry over. State starts empty: the windows
    # the old job still held open (all of the first half's: the watermark is 10 s behind)
    # are lost, and windows of the second half alone are counted exactly.
    assert duplicates == 0
    switch_ms = max(e.event_time_ms for e in events[:1_500])
    resumed = min(e.event_time_ms for e in events[1_500:])
    before = {k for k in expected if k[0] + 5_000 <= resumed}
    after = {k: n for k, n in expected.items() if k[0] > switch_ms}
    assert before and not before & set(counts), "the old state's windows should be gone"
    assert after and all(counts.get(k) == n for k, n in after.items())


def test_an_unhealthy_upgrade_rolls_back_to_the_stable_code_on_s3(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, s3_url: str
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    deploy, checkpoint, source, _ = deployment_of(bootstrap, s3_url, tmp_path, "rollback_deploy")
    produce_events(bootstrap, source, list(generate_events(1_000, seed=47)))
    folder = tmp_path / "code"

    stable = deploy(code(folder, GOOD.format(tag="stable")), UpgradeMode.SAVEPOINT)
    assert stable["status"] == "STABLE", stable
    # The same folder, edited in place: the rollback must run the code as it was deployed.
    code(folder, BAD)
    with pytest.raises(UpgradeRolledBackError, match="rolled back to") as failed:
        deploy(str(folder), UpgradeMode.SAVEPOINT, compat_check=False)
    assert "this release is broken" in str(failed.value)  # the bad job's own reason
    record = deployment_status(checkpoint)
    assert record is not None and record.status is DeploymentStatus.ROLLED_BACK
    assert record.stable is not None and record.stable.spec_hash == stable["spec_hash"]
    before = committed(checkpoint)
    produce_events(bootstrap, source, list(generate_events(500, seed=53)))
    wait_until(None, "the rolled-back job commits", lambda: committed(checkpoint) > before, 180)
    assert ControlFolder(checkpoint).read_lease() is not None

    # Deployed again unchanged, the spec rolled back from is refused, naming why.
    with pytest.raises(DeploymentRefusedError, match="was rolled back"):
        deploy(str(folder), UpgradeMode.SAVEPOINT, compat_check=False)
    request_stop(checkpoint, requested_by="test")
    wait_until(None, "the driver stopped", lambda: live_lease(checkpoint) is None, 180)
