"""Secrets on YARN: a sentinel SASL password in the `kafka` connection and the S3 secret key in
the `aws` connection reach a driver in a YARN application master (it authenticates to the
broker, commits lag offsets and writes its exactly-once sink, its state on S3), and neither
is in any file the submit wrote or shipped, on any command line, in any container's
environment, in any log or in the submit's XCom.

Searched: every file under the YARN cluster's folder (the NodeManager's local folders with
each container's launch script and localized files, the conf archive Spark ships, the
container logs), the Spark staging folder (kept for this test), the submit's work folder,
zip archives opened; the command lines of every process on the machine and the environment
of every container process while the job ran; the operators' log records and return values.
The places allowed are the credentials channel itself: the token files the NodeManager gives
each container (`container_tokens`, and its private copy `*.tokens`), which other users must
not reach, and the AWS variables of the driver's Python processes (s3fs reads them
there). The application master's JVM and the executors get no secret in their environment."""

from __future__ import annotations

import io
import json
import logging
import stat
import time
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from airflow.sdk import Context

from airflow_provider_kafkaspark.core.cluster.job_ref import YarnJobRef, job_ref_from_dict
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
from airflow_provider_kafkaspark.examples.access_events import generate_events, produce_events
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
from airflow_provider_kafkaspark.spark.local_session import spark_jars_option
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.s3 import LocalS3Server
from kafkaspark_devstack.yarn import LocalYarnCluster
from reliability.scenarios.secrets import HOST, sasl_cluster, sasl_extra
from tests.cluster.yarn_apps import use_yarn_worker, wait
from tests.conftest import S3_BUCKET
from tests.integration.kafka_util import create_topic, read_all_values
from tests.lifecycle_story import committed, stop_with_savepoint

PASSWORD = f"yarn-sentinel-{uuid.uuid4().hex[:12]}"
SOURCE, SINK = "secret_source", "secret_sink"
TOKEN_FILES = ("container_tokens",)


@pytest.fixture(scope="module")
def sasl_broker(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LocalKafkaCluster, str]]:
    cluster, sasl_port = sasl_cluster(tmp_path_factory.mktemp("sasl-kafka"), PASSWORD)
    with cluster:
        yield cluster, f"{HOST}:{sasl_port}"


def scan_bytes(data: bytes, where: str, needles: dict[str, bytes], hits: list[str]) -> None:
    for name, needle in needles.items():
        if needle in data:
            hits.append(f"{name} in {where}")
    if data[:4] == b"PK\x03\x04":  # a zip (the conf archive, shipped code): its members too
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for member in archive.namelist():
                    scan_bytes(archive.read(member), f"{where}!{member}", needles, hits)
        except (zipfile.BadZipFile, OSError):
            pass


def token_file(path: Path) -> bool:
    return path.name in TOKEN_FILES or path.name.endswith(".tokens")


def scan_tree(root: Path, needles: dict[str, bytes], hits: list[str], tokens: list[Path]) -> int:
    count = 0
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        count += 1
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if token_file(path):
            tokens.append(path)
            continue
        scan_bytes(data, str(path), needles, hits)
    return count


def container_processes(app_id: str) -> list[int]:
    """Processes of the application's containers: their environment names the container."""
    suffix = app_id.removeprefix("application_").encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if b"CONTAINER_ID=container_" + suffix in environ:
            found.append(int(proc.name))
    return found


def test_no_secret_in_what_a_yarn_submit_writes_or_ships(
    monkeypatch: pytest.MonkeyPatch,
    yarn: LocalYarnCluster,
    sasl_broker: tuple[LocalKafkaCluster, str],
    s3_server: LocalS3Server,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    kafka_cluster, sasl_servers = sasl_broker
    aws = s3_server.aws_connection()
    s3_secret = str(aws["password"])
    needles = {"sasl password": PASSWORD.encode(), "s3 secret key": s3_secret.encode()}
    extra = {"deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": yarn.web_url}
    conns: dict[str, dict[str, Any]] = {
        "spark_yarn": {"conn_type": "spark", "host": "yarn", "extra": extra},
        "kafka_sasl": {"conn_type": "kafka", "extra": sasl_extra(sasl_servers, PASSWORD)},
        "s3_secret": aws,
    }
    use_yarn_worker(monkeypatch, yarn, conns)
    caplog.set_level(logging.INFO)

    plain = kafka_cluster.bootstrap_servers
    create_topic(plain, SOURCE, 2)
    create_topic(plain, SINK, 2)
    produce_events(plain, SOURCE, list(generate_events(2_000, seed=5)))
    base = f"s3://{S3_BUCKET}/{tmp_path.name}"
    checkpoint = f"{base}/checkpoint"
    staging = tmp_path / "staging"
    spec = job_spec_dict(
        bootstrap_servers="from-connection:9092",
        checkpoint=checkpoint,
        job_name="yarn_secrets",
        source_topic=SOURCE,
        sink_topic=SINK,
        max_offsets_per_trigger=500,
    )
    # Every record passes to the sink (the example's windows would wait for a watermark).
    spec["transformation"], spec["sql"] = None, "SELECT key, value FROM source"
    spec["spark_conf"] = {
        "spark.sql.shuffle.partitions": "2",
        # Kept after the application ends, so that what was shipped can be searched.
        "spark.yarn.stagingDir": staging.as_uri(),
        "spark.yarn.preserve.staging.files": "true",
    }
    handle = SubmitStreamingJobOperator(
        task_id="submit",
        job_spec=spec,
        kafka_conn_id="kafka_sasl",
        spark_conn_id="spark_yarn",
        aws_conn_id="s3_secret",
        jars=spark_jars_option(s3a=True),
        workdir=str(tmp_path / "jobs"),
        max_restarts=1,
    ).execute(cast(Context, {}))
    ref = job_ref_from_dict(handle["job_ref"])
    assert isinstance(ref, YarnJobRef)
    hits: list[str] = []
    seen_processes = 0
    driver_storage_variables: set[str] = set()
    with s3_options_scope(s3_server.storage_options()):
        # The driver read S3 and authenticated to the broker: it got both secrets.
        wait("two committed batches", lambda: committed(checkpoint), lambda n: n >= 1, 300)
        for pid in container_processes(ref.application_id):
            seen_processes += 1
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes()
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            for entry in environ.split(b"\0"):
                name = entry.split(b"=", 1)[0].decode(errors="replace")
                # The driver's Python keeps the storage keys in its environment for s3fs,
                # which its children (the lag commit process) inherit: its own channel's end.
                if name.startswith("AWS_") and b"python" in command.split(b"\0")[0]:
                    driver_storage_variables.add(name)
                    continue
                scan_bytes(entry, f"/proc/{pid}/environ {name}", needles, hits)
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                try:
                    scan_bytes((proc / "cmdline").read_bytes(), f"{proc}/cmdline", needles, hits)
                except OSError:
                    pass
    # Lag commits reached the broker through the SASL listener, under the job's group.
    with KafkaFacade({"bootstrap.servers": plain}) as kafka:
        lag = wait(
            "the job's lag commits",
            lambda: kafka.group_offsets("kafkaspark.yarn_secrets"),
            lambda offsets: sum(sum(p.values()) for p in offsets.values()) > 0,
            120,
        )
    stopped = stop_with_savepoint("stop", handle, f"{base}/savepoints", "s3_secret")
    assert stopped["stopped"]["clean"] is True, stopped
    written = read_all_values(plain, SINK, 2)
    assert written, "the exactly-once sink wrote nothing"
    time.sleep(2)  # the NodeManager writes the containers' last log lines

    tokens: list[Path] = []
    files = scan_tree(yarn.base_dir, needles, hits, tokens)
    files += scan_tree(staging, needles, hits, tokens)
    files += scan_tree(tmp_path / "jobs", needles, hits, tokens)
    for record in caplog.records:
        scan_bytes(record.getMessage().encode(), f"log record {record.name}", needles, hits)
    scan_bytes(json.dumps(handle).encode(), "the submit's XCom", needles, hits)
    scan_bytes(json.dumps(stopped).encode(), "the stop's XCom", needles, hits)

    print(
        f"searched {files} files, {seen_processes} container processes, "
        f"{len(caplog.records)} log records; lag offsets {lag}; {len(written)} sink records; "
        f"storage variables of the driver's processes {sorted(driver_storage_variables)}"
    )
    assert seen_processes >= 2, "the driver's container processes were not found"
    assert list(staging.rglob("__spark_conf__*.zip")), "the staging folder was not kept"
    assert not hits, "\n".join(hits)
    # The channel: the containers' token files hold the secrets, and other users cannot reach
    # them (the NodeManager makes nmPrivate 0700 and each application's folder 0710).
    holding = [p for p in tokens if PASSWORD.encode() in p.read_bytes()]
    assert holding, f"no container token file carried the secret: {tokens}"
    closed = {str(p): closed_to_others(p, yarn.base_dir) for p in holding}
    assert all(closed.values()), closed


def closed_to_others(path: Path, root: Path) -> str:
    """The folder on the way to `path` (below `root`) that other users cannot pass, and its
    mode; '' when every folder lets them through and the file is readable by them."""
    if stat.S_IMODE(path.stat().st_mode) & 0o004 == 0:
        return f"{path.name} {oct(stat.S_IMODE(path.stat().st_mode))}"
    for folder in path.parents:
        if folder == root:
            break
        mode = stat.S_IMODE(folder.stat().st_mode)
        if mode & 0o001 == 0:
            return f"{folder.name} {oct(mode)}"
    return ""
