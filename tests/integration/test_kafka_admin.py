"""The Kafka facade against a real broker."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_kafkaspark.core.kafka.admin import BrokerAddress, KafkaFacade
from airflow_provider_kafkaspark.core.kafka.client import client_config
from airflow_provider_kafkaspark.core.kafka.offsets import TopicPartition, Watermarks
from airflow_provider_kafkaspark.errors import (
    ConsumerGroupActiveError,
    KafkaUnavailableError,
    TopicNotFoundError,
)
from kafkaspark_devstack.kafka import LocalKafkaCluster
from tests.integration.kafka_util import create_topic, produce_numbered

TIMEOUT_S = 20.0


def unique(name: str) -> str:
    return f"ka_{name}_{uuid.uuid4().hex[:8]}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def topic_exists(bootstrap: str, topic: str) -> bool:
    admin = AdminClient(client_config({"bootstrap.servers": bootstrap}, 10))
    return topic in admin.list_topics(timeout=10).topics


def produce_at(bootstrap: str, topic: str, records: list[tuple[int, int]]) -> None:
    """Produce one record per (partition, timestamp ms), in order."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, ts in records:
        producer.produce(topic, value=str(ts).encode(), partition=partition, timestamp=ts)
    assert producer.flush(30) == 0


@pytest.fixture
def facade(kafka_cluster: LocalKafkaCluster) -> Iterator[KafkaFacade]:
    with KafkaFacade(
        {"bootstrap.servers": kafka_cluster.bootstrap_servers}, timeout_s=TIMEOUT_S
    ) as f:
        yield f


def test_partition_counts_and_absent_topics_are_not_created(
    kafka_cluster: LocalKafkaCluster, facade: KafkaFacade
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic, absent = unique("counts"), unique("absent")
    create_topic(bootstrap, topic, partitions=3)
    assert facade.topic_partitions([topic, absent]) == {topic: 3}
    everything = facade.topic_partitions()
    assert everything[topic] == 3
    assert absent not in everything

    # A metadata request by name from a client with the derived config does not create the
    # topic, although this broker auto-creates topics for clients that allow it.
    asked = unique("asked_by_name")
    admin = AdminClient(client_config({"bootstrap.servers": bootstrap}, 10))
    admin.list_topics(topic=asked, timeout=10)
    time.sleep(1)
    assert not topic_exists(bootstrap, absent)
    assert not topic_exists(bootstrap, asked)


def test_watermarks_after_producing_known_counts(
    kafka_cluster: LocalKafkaCluster, facade: KafkaFacade
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique("watermarks")
    create_topic(bootstrap, topic, partitions=3)
    acked = produce_numbered(bootstrap, topic, 300)
    tps = [TopicPartition(topic, p) for p in range(3)]
    assert facade.watermarks(tps) == {
        TopicPartition(topic, p): Watermarks(0, acked[p]) for p in range(3)
    }

    # Records deleted from the start move the low watermark.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deleted = admin.delete_records([KafkaTopicPartition(topic, 0, 2)], request_timeout=10)
    for future in deleted.values():
        future.result(timeout=30)
    assert facade.watermarks([tps[0]])[tps[0]] == Watermarks(2, acked[0])

    with pytest.raises(TopicNotFoundError, match=f"{topic}-7"):
        facade.watermarks([TopicPartition(topic, 7)])
    with pytest.raises(TopicNotFoundError):
        facade.watermarks([TopicPartition(unique("nothing"), 0)])


def test_read_committed_watermarks_stop_at_an_open_transaction(
    kafka_cluster: LocalKafkaCluster, facade: KafkaFacade
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique("txn")
    create_topic(bootstrap, topic, partitions=1)
    produce_numbered(bootstrap, topic, 4)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("tx")})
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=str(i).encode(), partition=0)
    assert producer.flush(30) == 0
    tp = TopicPartition(topic, 0)
    try:
        assert facade.watermarks([tp])[tp] == Watermarks(0, 7)
        assert facade.watermarks([tp], read_committed=True)[tp] == Watermarks(0, 4)
    finally:
        producer.abort_transaction(30)


def test_offsets_for_times_and_record_timestamps(
    kafka_cluster: LocalKafkaCluster, facade: KafkaFacade
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique("times")
    create_topic(bootstrap, topic, partitions=2)
    # Recent timestamps: the broker's time-based retention would delete old ones at once.
    base = (int(time.time()) - 3600) * 1000
    produce_at(bootstrap, topic, [(0, base + i * 1000) for i in range(10)])
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)

    assert facade.offsets_for_times({p0: base + 2500, p1: base}) == {p0: 3, p1: 0}
    assert facade.offsets_for_times({p0: base + 3000})[p0] == 3
    assert facade.offsets_for_times({p0: base - 60_000})[p0] == 0
    # No record that late: the end offset, as the exclusive end of a backfill.
    assert facade.offsets_for_times({p0: base + 3_600_000})[p0] == 10

    assert facade.record_timestamps({p0: 0, p1: 0}) == {p0: base, p1: None}
    assert facade.record_timestamps({p0: 5}) == {p0: base + 5000}
    assert facade.record_timestamps({p0: 9}) == {p0: base + 9000}
    assert facade.record_timestamps({p0: 10}) == {p0: None}


def test_group_offsets_commit_then_read_back(
    kafka_cluster: LocalKafkaCluster, facade: KafkaFacade
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic, group = unique("groups"), unique("group")
    create_topic(bootstrap, topic, partitions=3)
    produce_numbered(bootstrap, topic, 60)

    assert facade.group_offsets(group) == {}
    facade.commit_group_offsets(group, {topic: {0: 3, 1: 7}})
    assert facade.group_offsets(group) == {topic: {0: 3, 1: 7}}
    some = facade.group_offsets(group, [TopicPartition(topic, 1), TopicPartition(topic, 2)])
    assert some == {topic: {1: 7}}

    # Nothing is committed when one partition does not exist.
    with pytest.raises(TopicNotFoundError, match=f"{topic}-9"):
        facade.commit_group_offsets(group, {topic: {0: 5, 9: 1}})
    assert facade.group_offsets(group) == {topic: {0: 3, 1: 7}}

    facade.commit_group_offsets(group, {topic: {0: 4}})
    assert facade.group_offsets(group) == {topic: {0: 4, 1: 7}}


def test_commit_is_refused_while_the_group_has_members(
    kafka_cluster: LocalKafkaCluster, facade: KafkaFacade
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic, group = unique("active"), unique("active_group")
    create_topic(bootstrap, topic, partitions=1)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the consumer never joined its group"
            consumer.poll(0.2)
        with pytest.raises(ConsumerGroupActiveError, match=group):
            facade.commit_group_offsets(group, {topic: {0: 1}})
    finally:
        consumer.close()


def test_describe_cluster(kafka_cluster: LocalKafkaCluster, facade: KafkaFacade) -> None:
    description = facade.describe_cluster()
    node = kafka_cluster.node(1)
    assert description.cluster_id == kafka_cluster.status()["cluster_id"]
    assert description.brokers == [BrokerAddress(1, "127.0.0.1", node.port)]
    assert description.controller_id == 1
    assert description.to_dict()["brokers"] == [
        {"node_id": 1, "host": "127.0.0.1", "port": node.port}
    ]


def test_a_dead_cluster_fails_fast_with_a_typed_error() -> None:
    server = f"127.0.0.1:{free_port()}"
    facade = KafkaFacade({"bootstrap.servers": server, "sasl.password": "s3cret-pw"}, timeout_s=2)
    started = time.monotonic()
    with pytest.raises(KafkaUnavailableError) as caught:
        facade.watermarks([TopicPartition("anything", 0)])
    elapsed = time.monotonic() - started
    message = str(caught.value)
    assert server in message and "2s" in message
    assert "s3cret-pw" not in message
    assert elapsed < 2 * 2
