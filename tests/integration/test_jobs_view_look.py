"""The jobs view's look at real jobs: checkpoints and control folders on the local S3 server
and on disk, lag from the local Kafka broker. One job's storage unreachable, another's lease
file corrupt, a third's broker down: each row says so, and the others are intact."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import fsspec
import pytest

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.core.overview.facts import KnownJob
from airflow_provider_kafkaspark.core.overview.row import RUNNING, UNREADABLE
from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
from airflow_provider_kafkaspark.plugins.jobs_view.look import job_rows
from airflow_provider_kafkaspark.plugins.jobs_view.render import jobs_page
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import LocalS3Server
from tests.conftest import S3_BUCKET
from tests.integration.kafka_util import create_topic, produce_numbered

pytestmark = [pytest.mark.integration, pytest.mark.airflow]

META = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1_700_000_000_000, "conf": {}})
TOPIC = "jobs_view_look"


def write_checkpoint(url: str, topic: str, committed: dict[int, int], **options: object) -> None:
    """Batch 0 as Spark writes it: metadata, the offsets it read to, its commit."""
    fs, root = fsspec.core.url_to_fs(url, **options)
    offsets = {topic: {str(p): o for p, o in committed.items()}}
    for rel, text in (
        ("metadata", json.dumps({"id": "q"})),
        ("offsets/0", f"v1\n{META}\n{json.dumps(offsets)}"),
        ("commits/0", 'v1\n{"nextBatchWatermarkMs":0}'),
    ):
        fs.makedirs(f"{root}/{rel.rsplit('/', 1)[0]}" if "/" in rel else root, exist_ok=True)
        with fs.open(f"{root}/{rel}", "w") as f:
            f.write(text)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def known(name: str, checkpoint: str, kafka: str, aws: str | None = None) -> KnownJob:
    return KnownJob(
        name, checkpoint, "dag", "submit", "run", "2026-11-27T00:00:00", None, kafka, aws
    )


def test_each_row_says_what_it_could_not_read_and_the_others_stay_intact(
    kafka_cluster: LocalKafkaCluster,
    s3_server: LocalS3Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    create_topic(bootstrap, TOPIC, 2)
    acked = produce_numbered(bootstrap, TOPIC, 500)
    dead = f"127.0.0.1:{closed_port()}"
    for name, servers in (("kafka_up", bootstrap), ("kafka_down", dead)):
        monkeypatch.setenv(
            f"AIRFLOW_CONN_{name.upper()}",
            json.dumps({"conn_type": "kafka", "extra": {"bootstrap.servers": servers}}),
        )
    store = {**s3_server.aws_connection(), "password": s3_server.secret_key}
    gone = {**store, "extra": {**store["extra"], "endpoint_url": f"http://{dead}"}}
    monkeypatch.setenv("AIRFLOW_CONN_AWS_STORE", json.dumps(store))
    monkeypatch.setenv("AIRFLOW_CONN_AWS_GONE", json.dumps(gone))

    s3_checkpoint = f"s3://{S3_BUCKET}/{tmp_path.name}/live/checkpoint"
    with s3_options_scope(s3_server.storage_options()):
        write_checkpoint(s3_checkpoint, TOPIC, {0: 10, 1: 20}, **s3_server.storage_options())
        ControlFolder(s3_checkpoint).acquire_lease(Lease.new("live", ttl_ms=120_000))
    corrupt = tmp_path / "corrupt"
    write_checkpoint(str(corrupt), TOPIC, {0: 1, 1: 1})
    (corrupt / "_kafkaspark").mkdir()
    (corrupt / "_kafkaspark" / "lease.json").write_text("{not json")
    broker_down = tmp_path / "broker_down"
    write_checkpoint(str(broker_down), TOPIC, {0: 5, 1: 5})

    jobs = [
        known("live", s3_checkpoint, "kafka_up", "aws_store"),
        known("store_gone", f"s3://{S3_BUCKET}/elsewhere/checkpoint", "kafka_up", "aws_gone"),
        known("corrupt", str(corrupt), "kafka_up"),
        known("broker_down", str(broker_down), "kafka_down"),
        known('<img src=x onerror="alert(1)">', str(broker_down), "kafka_down"),
    ]
    rows = {row.job_name: row for row in job_rows(jobs)}

    live = rows["live"]
    assert live.state == RUNNING, live.state_reason
    assert live.last_committed_batch == 0
    assert live.lag == {TOPIC: acked[0] - 10 + acked[1] - 20}
    assert live.last_batch_age_s is not None and live.last_batch_age_s < 120
    assert live.problems == ()

    assert rows["store_gone"].state == UNREADABLE
    assert dead in rows["store_gone"].state_reason  # names the endpoint it could not reach

    assert rows["corrupt"].state == UNREADABLE
    assert "lease.json" in rows["corrupt"].state_reason
    assert rows["corrupt"].lag == {TOPIC: acked[0] - 1 + acked[1] - 1}  # the rest was read

    down = rows["broker_down"]
    assert down.lag is None and down.lag_total is None  # unknown, never 0
    assert down.last_committed_batch == 0 and down.lag_unknown_reason

    page = jobs_page(list(rows.values()), base="/kafkaspark", airflow_base="")
    assert page.count("<tr data-job=") == 5
    assert "<img src=x" not in page and "&lt;img src=x" in page
    assert json.dumps([row.to_dict() for row in rows.values()])  # the JSON route's body
