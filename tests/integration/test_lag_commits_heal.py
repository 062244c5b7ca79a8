"""Lag commits heal after the group coordinator moves: three real brokers, a real driver,
the coordinator's preferred broker killed and restarted, and its leadership of the group's
`__consumer_offsets` partition handed back to it (as Kafka's own leader rebalance does
within `leader.imbalance.check.interval.seconds`, 300 s by default). Before the fix the
driver's client kept asking the broker that had been the coordinator, every lag commit was
answered `NOT_COORDINATOR`, and Kafka's tool showed a lag the job did not have."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_kafkaspark.core.control.folder import ControlFolder, request_stop
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.kafka.offsets import TopicPartition as KafkaTopicPartition
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from kafkaspark_devstack.drivers import read_log, wait_exit
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, describe_group, produce_numbered
from tests.integration.runtime_util import committed_batches, start, wait_until
from tests.integration.test_runtime import stateless_spec

TOPIC = "lag_heal"
GROUP = "kafkaspark.lag_heal"
OFFSETS_TOPIC = "__consumer_offsets"


@pytest.fixture
def three_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    with LocalKafkaCluster(tmp_path_factory.mktemp("kafka3"), brokers=3) as cluster:
        yield cluster


def group_tool(bootstrap: str, *args: str) -> str | None:
    """What Kafka's own kafka-consumer-groups prints for the lag group, or None when it could
    not answer (the coordinator moving). Kafka's Java tool, not librdkafka: an offset fetch
    answered with a coordinator error crashed librdkafka 2.16's admin client in this process
    (SIGSEGV in rd_kafka_cgrp_op), as the lag worker's docstring records for the driver."""
    try:
        return describe_group(bootstrap, GROUP, *args)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None


def coordinator_of(bootstrap: str) -> int | None:
    """The broker id that coordinates the lag group now, as Kafka's tool finds it."""
    out = group_tool(bootstrap, "--state")
    found = re.search(rf"^{re.escape(GROUP)}\s+\S+\s+\((\d+)\)", out or "", re.MULTILINE)
    return int(found.group(1)) if found else None


def group_offsets(bootstrap: str) -> dict[str, dict[int, int]] | None:
    """CURRENT-OFFSET per partition of the lag group, as Kafka's tool shows it."""
    out = group_tool(bootstrap)
    if out is None:
        return None
    offsets: dict[str, dict[int, int]] = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 4 and cols[0] == GROUP and re.fullmatch(r"\d+", cols[3]):
            offsets.setdefault(cols[1], {})[int(cols[2])] = int(cols[3])
    return offsets


def group_partition(group: str, partitions: int) -> int:
    """The `__consumer_offsets` partition that holds `group`, as Kafka picks it:
    abs(String.hashCode(group)) % partitions."""
    h = 0
    for unit in group.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return 0 if signed == -(1 << 31) else abs(signed) % partitions


def offsets_partition(bootstrap: str, partition: int) -> tuple[int, list[int]] | None:
    """Leader and replicas of one `__consumer_offsets` partition (None until it exists)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = admin.list_topics(OFFSETS_TOPIC, timeout=30).topics.get(OFFSETS_TOPIC)
    if topic is None or topic.error is not None or partition not in topic.partitions:
        return None
    meta = topic.partitions[partition]
    return meta.leader, list(meta.replicas)


def group_matches_checkpoint(bootstrap: str, checkpoint: str) -> bool:
    """The lag group's offsets (Kafka's tool) are the checkpoint's committed ones."""
    committed = CheckpointReader(checkpoint).position().committed_offsets
    return bool(committed) and group_offsets(bootstrap) == committed


def group_reached(
    group: dict[str, dict[int, int]] | None, target: dict[str, dict[int, int]]
) -> bool:
    """Every partition of `target` has a group offset at or past it."""
    return group is not None and all(
        group.get(topic, {}).get(partition, -1) >= offset
        for topic, offsets in target.items()
        for partition, offset in offsets.items()
    )


def trickle(bootstrap: str, stop: threading.Event, start_value: int) -> None:
    """New records every half second, so the driver keeps planning batches (and committing
    their offsets to the lag group) while the coordinator moves."""
    value = start_value
    while not stop.wait(0.5):
        produce_numbered(bootstrap, TOPIC, 20, start=value)
        value += 20


def test_lag_commits_resume_after_the_coordinator_moves_back(
    three_brokers: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = three_brokers.bootstrap_servers
    create_topic(bootstrap, TOPIC, 4, replication=3)
    produce_numbered(bootstrap, TOPIC, 2000)
    # The group's coordinator is the leader of its __consumer_offsets partition; the broker
    # that leads it by preference is killed and restarted before the driver starts, so the
    # driver's client finds the coordinator on another broker. (Killed while the driver runs,
    # the commits time out instead, and whether librdkafka then aborts the child, which heals
    # it by accident, is timing: the issue saw both.)
    group_tool(bootstrap, "--state")  # a FindCoordinator: Kafka creates __consumer_offsets
    partition = group_partition(GROUP, 10)
    wait_until(
        None, "__consumer_offsets", lambda: offsets_partition(bootstrap, partition) is not None
    )
    found = offsets_partition(bootstrap, partition)
    assert found is not None
    preferred = found[1][0]
    three_brokers.kill_broker(preferred)

    def led_elsewhere() -> bool:
        now = offsets_partition(
            three_brokers.node(next(n for n in (1, 2, 3) if n != preferred)).address, partition
        )
        return now is not None and now[0] not in (-1, preferred)

    wait_until(None, "the group's partition to move", led_elsewhere, timeout=120)
    three_brokers.start_broker(preferred)
    moved = offsets_partition(bootstrap, partition)
    assert moved is not None and moved[0] != preferred, moved

    spec = stateless_spec(bootstrap, TOPIC, tmp_path, "lag_heal")
    checkpoint = str(tmp_path / "checkpoint")
    driver = start(spec, tmp_path / "run")
    stop_trickle = threading.Event()
    feeder: threading.Thread | None = None
    try:
        wait_until(driver, "the first batches", lambda: committed_batches(checkpoint) >= 1)
        wait_until(
            driver,
            "the lag group to follow",
            lambda: group_matches_checkpoint(bootstrap, checkpoint),
        )
        assert coordinator_of(bootstrap) == moved[0]
        feeder = threading.Thread(target=trickle, args=(bootstrap, stop_trickle, 10_000))
        feeder.start()
        time.sleep(5)  # a few batches, and their commits, against that coordinator
        # Kafka hands the leadership back to the preferred broker after
        # leader.imbalance.check.interval.seconds (300 s by default); the test does at once
        # what the controller does then.
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.elect_leaders(
            ElectionType.PREFERRED, [TopicPartition(OFFSETS_TOPIC, partition)]
        ).result(60)
        moved_back = time.monotonic()
        wait_until(
            driver,
            "the coordinator to move back to the restarted broker",
            lambda: coordinator_of(bootstrap) == preferred,
            timeout=120,
        )
        print(f"coordinator moved from broker {moved[0]} back to {preferred}")

        # Lag commits resume while records arrive: the group reaches the offsets the checkpoint
        # had committed once the coordinator was back. A moving target (the group equal to the
        # checkpoint now) is not asked for: Kafka's tool takes seconds to answer, and batches
        # commit every second meanwhile.
        target = CheckpointReader(checkpoint).position().committed_offsets
        wait_until(
            driver,
            "the lag group to reach the checkpoint's offsets after the move",
            lambda: group_reached(group_offsets(bootstrap), target),
            timeout=90,
            seen=lambda: {"target": target, "group": group_offsets(bootstrap)},
        )
        recovered_s = time.monotonic() - moved_back
        stop_trickle.set()
        feeder.join(30)

        # Caught up: Kafka's own tool shows the group at the end of every partition (lag 0).
        with KafkaFacade({"bootstrap.servers": bootstrap}) as kafka:
            count = kafka.topic_partitions([TOPIC])[TOPIC]
            marks = kafka.watermarks(KafkaTopicPartition(TOPIC, p) for p in range(count))
        end = {TOPIC: {tp.partition: w.high for tp, w in marks.items()}}

        def caught_up() -> bool:
            committed = CheckpointReader(checkpoint).position().committed_offsets
            return committed == end and group_matches_checkpoint(bootstrap, checkpoint)

        wait_until(driver, "the job and its lag group to catch up", caught_up, timeout=120)
        assert group_offsets(bootstrap) == end  # Kafka's tool: lag 0 on every partition
        progress = ControlFolder(checkpoint).read_progress()
        assert progress is not None and progress.lag_commits_failing() is None, progress
        print(
            "lag commits resumed "
            + json.dumps({"seconds_after_the_move_back": round(recovered_s, 1)})
        )
    finally:
        stop_trickle.set()
        if feeder is not None:
            feeder.join(30)
        request_stop(checkpoint, requested_by="test_lag_commits_heal")
        code = wait_exit(driver, 180)
        assert code == 0, read_log(driver)
