"""Produce and consume throughput of one local broker with confluent-kafka.

The ceiling that later sink benchmarks are compared with: what the broker and client do
on this machine with nothing else in the way.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any


def run(records: int = 500_000, size: int = 200, partitions: int = 3) -> dict[str, Any]:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkaspark_devstack.kafka import LocalKafkaCluster

    payload = b"x" * size
    with tempfile.TemporaryDirectory(prefix="kafkaspark-bench-") as tmp:
        with LocalKafkaCluster(Path(tmp) / "kafka") as cluster:
            bootstrap = cluster.bootstrap_servers
            admin = AdminClient({"bootstrap.servers": bootstrap})
            for future in admin.create_topics([NewTopic("bench", partitions, 1)]).values():
                future.result()

            producer = Producer(
                {
                    "bootstrap.servers": bootstrap,
                    "linger.ms": 5,
                    "acks": "all",
                    "enable.idempotence": True,
                    "compression.type": "none",
                }
            )
            start = time.perf_counter()
            for i in range(records):
                while True:
                    try:
                        producer.produce("bench", key=str(i).encode(), value=payload)
                        break
                    except BufferError:
                        producer.poll(0.05)
                producer.poll(0)
            left = producer.flush(120)
            produce_s = time.perf_counter() - start
            if left:
                raise RuntimeError(f"{left} records not acknowledged")

            consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": "bench",
                    "enable.auto.commit": False,
                    "fetch.min.bytes": 1,
                }
            )
            consumer.assign([TopicPartition("bench", p, 0) for p in range(partitions)])
            seen = 0
            start = time.perf_counter()
            while seen < records:
                batch = consumer.consume(10_000, timeout=5)
                if not batch:
                    raise RuntimeError(f"consumer stalled after {seen} of {records} records")
                seen += sum(1 for m in batch if m.error() is None)
            consume_s = time.perf_counter() - start
            consumer.close()

    mb = records * size / 1e6
    return {
        "records": records,
        "record_bytes": size,
        "partitions": partitions,
        "produce_seconds": round(produce_s, 3),
        "produce_records_per_s": round(records / produce_s),
        "produce_mb_per_s": round(mb / produce_s, 1),
        "consume_seconds": round(consume_s, 3),
        "consume_records_per_s": round(records / consume_s),
        "consume_mb_per_s": round(mb / consume_s, 1),
        "consume_to_produce_ratio": round(produce_s / consume_s, 2),
    }
