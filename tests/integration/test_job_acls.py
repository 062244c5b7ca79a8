"""A job runs under exactly the ACLs `job_acls(spec)` lists (docs/kafka-acls.md), and not
without each of the ones a test here withholds.

A real broker with KRaft's ACL authorizer on (`allow.everyone.if.no.acl.found=false`) and a
SASL_PLAINTEXT/SCRAM-SHA-512 listener; PLAINTEXT's principal is the super user, for setup and
for reading what the job did. The job's principal (`User:<name>`) logs in with SCRAM and has
those ACLs and no other (asked back from the broker). A real driver then reads the source
(Spark's Java clients), writes the exactly-once sink with transactions (librdkafka producers
and marker consumers in the Python workers) and commits lag offsets (a librdkafka admin
client); the Airflow tasks' own calls (topic check, offsets, record timestamps, the lag
group) run with the same login.

Withheld, one at a time (each a driver of its own):
- the transactional-id prefix: the sink's producers are refused, the query fails (exit 4,
  the sink's typed error in the driver's log names the refusal), nothing is visible in the
  sink, no batch commits;
- Read on the sink topic: the marker's transactional offset commit is refused, the same end;
- the lag group: the job runs on and its output is complete, while the progress file says
  that lag commits fail, and why.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.core.control.folder import ControlFolder, request_stop
from airflow_provider_kafkaspark.core.health.observe import health_observation, kafka_view
from airflow_provider_kafkaspark.core.kafka.acls import JobAcl, job_acls
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.kafka.offsets import TopicPartition
from airflow_provider_kafkaspark.core.spec.job_code import check_topics_exist
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from kafkaspark_devstack.drivers import read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from kafkaspark_devstack.kafka_acls import (
    acl_key,
    acls_of,
    add_scram_user,
    grant,
    scram_client_config,
)
from kafkaspark_devstack.kafka_security import SCRAM, BrokerSecurity
from tests.integration.kafka_util import create_topic, produce_numbered, read_all_values
from tests.integration.runtime_util import committed_batches, start, wait_until

RECORDS = 300
PARTITIONS = 2
PASSWORD = "scram-job-password-1"
RUN_S = 240.0
STOP_S = 180.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    security = BrokerSecurity(scram=True, authorizer=True)
    with LocalKafkaCluster(tmp_path_factory.mktemp("acl-kafka"), security=security) as running:
        yield running


def job_spec(cluster: LocalKafkaCluster, name: str, user: str, tmp_path: Path) -> dict[str, Any]:
    """The job as its author writes it, with the job principal's login as its client
    settings (what a submit fills in from the `kafka` connection)."""
    login = scram_client_config(cluster.listener_servers(SCRAM), user, PASSWORD)
    return {
        "job_name": name,
        "source": {
            "bootstrap_servers": login.pop("bootstrap.servers"),
            "subscribe": [f"{name}_in"],
            "max_offsets_per_trigger": RECORDS // 2,
        },
        "sql": "SELECT key, value FROM source",
        "sink": {"kind": "kafka_exactly_once", "topic": f"{name}_out"},
        "checkpoint_location": str(tmp_path / "checkpoint"),
        "trigger_interval": "1 second",
        "kafka_config": login,
        "spark_conf": {"spark.sql.shuffle.partitions": str(PARTITIONS)},
    }


def set_up(
    cluster: LocalKafkaCluster, name: str, tmp_path: Path, withheld: set[tuple[str, str]]
) -> tuple[dict[str, Any], JobSpec, list[JobAcl]]:
    """Topics with the records, the job's SCRAM user, and its ACLs (but the `withheld`
    ones, by name and operation) granted; the broker is asked back which it has."""
    plain = cluster.bootstrap_servers
    user = f"job-{name}"
    add_scram_user(plain, user, PASSWORD, login_servers=cluster.listener_servers(SCRAM))
    create_topic(plain, f"{name}_in", PARTITIONS)
    create_topic(plain, f"{name}_out", PARTITIONS)
    produce_numbered(plain, f"{name}_in", RECORDS)
    raw = job_spec(cluster, name, user, tmp_path)
    spec = JobSpec.from_dict(raw)
    granted = [a for a in job_acls(spec) if (a.name, a.operation) not in withheld]
    assert len(granted) == len(job_acls(spec)) - len(withheld), withheld
    grant(plain, f"User:{user}", granted)
    assert acls_of(plain, f"User:{user}") == {acl_key(a) for a in granted}
    return raw, spec, granted


def lag_total(cluster: LocalKafkaCluster, group: str) -> int:
    """The sum of the group's committed offsets. Only once the group has had a commit: on a
    fresh cluster librdkafka's admin client crashes the process (SIGSEGV) when an offsets
    read of a group is answered NOT_COORDINATOR (confluentinc/librdkafka#5040)."""
    with KafkaFacade({"bootstrap.servers": cluster.bootstrap_servers}) as kafka:
        offsets = kafka.group_offsets(group)
    return sum(sum(partitions.values()) for partitions in offsets.values())


def checkpoint_total(checkpoint: str) -> int:
    """The sum of the offsets the checkpoint's last committed batch read to; -1 before any."""
    try:
        offsets = CheckpointReader(checkpoint).position().committed_offsets
    except Exception:  # noqa: BLE001 - not written yet
        return -1
    return sum(sum(partitions.values()) for partitions in offsets.values())


def full_log(handle: Any) -> str:
    return Path(handle.log_file).read_text(errors="replace")


def test_a_job_runs_under_exactly_its_acls(cluster: LocalKafkaCluster, tmp_path: Path) -> None:
    started = time.monotonic()
    name = "acl_ok"
    raw, spec, granted = set_up(cluster, name, tmp_path, withheld=set())
    assert {(a.resource_type, a.pattern_type, a.name, a.operation) for a in granted} == {
        ("TOPIC", "LITERAL", f"{name}_in", "READ"),
        ("GROUP", "LITERAL", f"kafkaspark.{name}", "READ"),
        ("TOPIC", "LITERAL", f"{name}_out", "WRITE"),
        ("TOPIC", "LITERAL", f"{name}_out", "READ"),
        ("TRANSACTIONAL_ID", "PREFIXED", f"{name}-", "WRITE"),
        ("GROUP", "PREFIXED", f"{name}.", "READ"),
    }
    # The submit's topic check, with the job's login.
    check_topics_exist(spec)
    checkpoint = spec.checkpoint_location
    driver = start(raw, tmp_path / "run")
    group = f"kafkaspark.{name}"
    wait_until(
        driver,
        f"the checkpoint at the source's end ({RECORDS})",
        lambda: checkpoint_total(checkpoint) == RECORDS,
        timeout=RUN_S,
        seen=lambda: f"checkpoint total {checkpoint_total(checkpoint)}",
    )
    request_stop(checkpoint, requested_by="test", reason="ACL test")
    assert wait_exit(driver, STOP_S) == 0, read_log(driver)
    # The driver's last lag commit is made before it exits.
    assert lag_total(cluster, group) == RECORDS
    log = full_log(driver)
    assert not re.search(r"AUTHORIZATION_FAILED|[Aa]uthorization failed", log), [
        line for line in log.splitlines() if "uthorization" in line.upper()
    ][:5]

    progress = ControlFolder(checkpoint).read_progress()
    assert progress is not None
    assert progress.lag_commits_ok >= 1 and progress.lag_commits_failed == 0, progress
    assert progress.lag_commits_failing() is None
    values = read_all_values(cluster.bootstrap_servers, f"{name}_out", PARTITIONS)
    assert sorted(values, key=int) == [str(i) for i in range(RECORDS)]

    # What the Airflow tasks ask Kafka for this job (submit, health, reconcile, backfill),
    # with the job's own login: the ACLs cover them too.
    position = CheckpointReader(checkpoint).position()
    source = [TopicPartition(f"{name}_in", p) for p in range(PARTITIONS)]
    with KafkaFacade(spec.admin_config()) as kafka:
        assert kafka.group_offsets(group) == position.committed_offsets
        view = kafka_view(kafka, position.committed_offsets, spec.source.subscribe)
        assert view.partitions[f"{name}_in"][0].high > 0
        observed = health_observation(position, kafka)
        assert observed.end_offsets == position.committed_offsets
        stamps = kafka.record_timestamps(dict.fromkeys(source, 0))
        assert all(stamp is not None for stamp in stamps.values()), stamps
        assert set(kafka.offsets_for_times(dict.fromkeys(source, 0))) == set(source)
    print(f"run under exactly {len(granted)} ACLs: {time.monotonic() - started:.1f}s")


@pytest.mark.parametrize(
    ("withheld", "refusal"),
    [
        ("transactional id", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED|Transactional Id authoriz"),
        ("sink topic read", "TOPIC_AUTHORIZATION_FAILED|Topic authoriz"),
        ("lag group", "GROUP_AUTHORIZATION_FAILED"),
    ],
)
def test_without_one_of_its_acls_the_job_is_refused(
    withheld: str, refusal: str, cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    started = time.monotonic()
    name = {"transactional id": "acl_txn", "sink topic read": "acl_mark", "lag group": "acl_lag"}[
        withheld
    ]
    missing = {
        "transactional id": (f"{name}-", "WRITE"),
        "sink topic read": (f"{name}_out", "READ"),
        "lag group": (f"kafkaspark.{name}", "READ"),
    }[withheld]
    raw, spec, _ = set_up(cluster, name, tmp_path, withheld={missing})
    checkpoint = spec.checkpoint_location
    driver = start(raw, tmp_path / "run")

    if withheld == "lag group":
        # Monitoring only: the job runs on, its output is complete, its progress file says
        # that lag commits fail and why.
        def failing() -> bool:
            progress = ControlFolder(checkpoint).read_progress()
            return progress is not None and progress.lag_commits_failing() is not None

        wait_until(driver, "a failed lag commit in the progress file", failing, timeout=RUN_S)
        wait_until(
            driver,
            f"all {RECORDS} records in the sink",
            lambda: (
                len(read_all_values(cluster.bootstrap_servers, f"{name}_out", PARTITIONS))
                == RECORDS
            ),
            timeout=RUN_S,
        )
        request_stop(checkpoint, requested_by="test", reason="ACL test")
        assert wait_exit(driver, STOP_S) == 0, read_log(driver)
        progress = ControlFolder(checkpoint).read_progress()
        assert progress is not None and progress.lag_commits_ok == 0, progress
        message = progress.lag_commits_failing() or ""
        assert re.search(refusal, message), message
        values = read_all_values(cluster.bootstrap_servers, f"{name}_out", PARTITIONS)
        assert sorted(values, key=int) == [str(i) for i in range(RECORDS)]
    else:
        # The sink is refused: the query fails and, since the next driver would log in as
        # the same principal, the driver ends as a bad job (exit 4, never restarted) with a
        # stopped report naming the refusal; no batch commits (so no lag commit is made),
        # nothing is visible to a read_committed reader.
        code = wait_exit(driver, RUN_S)
        assert code == 4, f"exit {code}:\n{read_log(driver)}"
        typed = rf"FatalProducerError: exactly-once sink {name} -> {name}_out: .*({refusal})"
        assert re.search(typed, full_log(driver)), read_log(driver)
        stopped = ControlFolder(checkpoint).read_stopped()
        assert stopped is not None and re.search(
            rf"Kafka refused the job's principal \(({refusal})", stopped.message
        ), stopped
        assert committed_batches(checkpoint) == -1
        assert read_all_values(cluster.bootstrap_servers, f"{name}_out", PARTITIONS) == []
        progress = ControlFolder(checkpoint).read_progress()
        assert progress is None or progress.lag_commits_ok == 0, progress
    print(f"without {withheld}: {time.monotonic() - started:.1f}s")
