"""Small helpers the integration tests share: topics, producing, reading back."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_kafkaspark.spark.jars import find_java
from kafkaspark_devstack.jars import kafka_classpath


def create_topic(
    bootstrap: str, topic: str, partitions: int, replication: int = 1, **config: str
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=partitions, replication_factor=replication, config=config)
    for future in admin.create_topics([new], operation_timeout=30).values():
        try:
            future.result(timeout=120)
        except FutureTimeout:
            raise AssertionError(
                f"gave up after 120s waiting for Kafka at {bootstrap} to create {topic}"
            ) from None


def produce_numbered(
    bootstrap: str, topic: str, count: int, start: int = 0, **extra: Any
) -> Counter[int]:
    """Produce values str(start)..str(start+count-1); returns records acked per partition."""
    acked: Counter[int] = Counter()
    errors: list[str] = []

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            acked[msg.partition()] += 1

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **extra})
    for i in range(start, start + count):
        producer.produce(topic, key=str(i).encode(), value=str(i).encode(), on_delivery=on_delivery)
        producer.poll(0)
    remaining = producer.flush(120)
    assert remaining == 0 and not errors, (
        f"producing {count} records to {topic}: {sum(acked.values())} acked, "
        f"{remaining} still undelivered after a 120 s flush, errors {errors[:3]}"
    )
    return acked


def watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafkaspark-tests-wm"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            for p in range(partitions)
        }
    finally:
        consumer.close()


def read_all_values(
    bootstrap: str,
    topic: str,
    partitions: int,
    *,
    isolation: str = "read_committed",
    timeout: float = 60,
) -> list[str]:
    """Every value from earliest to the end each partition has for `isolation`.

    Stops at partition EOF rather than at the high watermark: on a transactional topic the
    last offsets are commit/abort markers that no consumer ever receives, and read_committed
    ends at the last stable offset. `timeout` bounds a stall (nothing new: no record, no
    partition reaching its end), not the whole read, which takes as long as the topic needs.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kafkaspark-tests-reader",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[str] = []
    at_end: set[int] = set()
    progress = time.monotonic()
    try:
        while len(at_end) < partitions:
            assert time.monotonic() - progress < timeout, (
                f"gave up reading {topic} ({isolation}) to the end of its {partitions} "
                f"partitions: nothing new for {timeout:g}s; last saw {len(values)} values, "
                f"partitions at end {sorted(at_end)}"
            )
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            progress = time.monotonic()
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    partition = msg.partition()
                    assert partition is not None
                    at_end.add(partition)
                continue
            value = msg.value()
            assert value is not None
            values.append(value.decode())
    finally:
        consumer.close()
    return values


def _java_string_hash(text: str) -> int:
    value = 0
    for char in text:
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    return value


def first_attempt_order(topic: str, partitions: int) -> list[int]:
    """The order in which Spark 4.0's Kafka source numbers a fresh batch's ranges.

    The end offsets of a batch planned live come from a java.util.HashMap keyed by
    TopicPartition (hash 31 * (31 + partition) + topic.hashCode()), iterated bucket by bucket
    (16 buckets up to 12 keys); a batch replayed from the offsets log numbers them by
    partition. Model checked against real runs in test_sink_slots.py.
    """
    buckets = []
    for partition in range(partitions):
        code = (31 * (31 + partition) + _java_string_hash(topic)) & 0xFFFFFFFF
        buckets.append(((code ^ (code >> 16)) & 15, partition))
    return [partition for _, partition in sorted(buckets)]


def renumbered_topic(prefix: str, partitions: int = 3) -> str:
    """A new topic name whose batches Spark numbers differently on a replay."""
    for _ in range(1000):
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        if first_attempt_order(name, partitions) != list(range(partitions)):
            return name
    raise AssertionError("no renumbered topic name found")


def describe_group(bootstrap: str, group: str, *args: str) -> str:
    """What Kafka's own kafka-consumer-groups tool prints of `group` (`--describe`, and
    `args` such as `--state`); raises CalledProcessError when it cannot answer."""
    import subprocess

    return subprocess.run(
        [
            str(find_java()),
            "-cp",
            kafka_classpath(),
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--group",
            group,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
