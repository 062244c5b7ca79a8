"""Reconcile time for 1,000 partitions: Kafka observation (real local broker) and the plan.

The observation is two batched ListOffsets requests plus one DescribeTopics; the plan is
pure and linear. Both are timed in the same run.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any


def run(partitions: int = 1000, repeat: int = 5) -> dict[str, Any]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from airflow_provider_kafkaspark.core.health.observe import kafka_view
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.core.kafka.reconcile import build_reconcile_plan
    from kafkaspark_devstack.kafka import LocalKafkaCluster

    topic = "reconcile_bench"
    with tempfile.TemporaryDirectory(prefix="kafkaspark-bench-") as tmp:
        with LocalKafkaCluster(Path(tmp) / "kafka", heap="1g") as cluster:
            bootstrap = cluster.bootstrap_servers
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result()
            producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
            for p in range(partitions):
                for _ in range(10):
                    producer.produce(topic, value=b"x", partition=p)
                producer.poll(0)
            producer.flush(120)
            # The checkpoint read 5 of 10 records of every partition; one partition is new.
            checkpoint = {topic: {p: 5 for p in range(partitions - 1)}}
            kafka = KafkaFacade({"bootstrap.servers": bootstrap}, timeout_s=30)
            observe_ms, plan_ms, view_ts_ms = [], [], []
            plan = None
            for _ in range(repeat):
                start = time.perf_counter()
                view = kafka_view(kafka, checkpoint, with_timestamps=False)
                observe_ms.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                plan = build_reconcile_plan(checkpoint, view)
                plan_ms.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            kafka_view(kafka, checkpoint, with_timestamps=True)
            view_ts_ms.append((time.perf_counter() - start) * 1000)
    assert plan is not None
    return {
        "partitions": partitions,
        "observe_ms_median": round(statistics.median(observe_ms), 1),
        "observe_with_record_timestamps_ms": round(view_ts_ms[0], 1),
        "plan_ms_median": round(statistics.median(plan_ms), 2),
        "findings": len(plan.findings),
        "total_lag_records": plan.total_lag_records,
    }
