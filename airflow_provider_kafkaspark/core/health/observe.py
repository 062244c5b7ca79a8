"""Observing: gather what the pure decisions (reconcile, health) need from a checkpoint and
from Kafka. The observe -> decide -> act split of Kubernetes operators: this module only
reads; `reconcile` and `health` only decide.
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.health.rules import Observation
from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
from airflow_provider_kafkaspark.core.kafka.offsets import (
    TopicOffsets,
    TopicPartition,
    flatten,
    nest,
)
from airflow_provider_kafkaspark.core.kafka.reconcile import KafkaView
from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointPosition


def kafka_view(
    kafka: KafkaFacade,
    checkpoint_offsets: TopicOffsets,
    subscribed: Iterable[str] = (),
    *,
    with_timestamps: bool = True,
) -> KafkaView:
    """Partitions and watermarks of every topic the checkpoint or the job names, in two
    batched offset requests, plus the timestamp of each first unread record (lag seconds)."""
    wanted = frozenset(subscribed)
    counts = kafka.topic_partitions(set(checkpoint_offsets) | wanted)
    partitions = [TopicPartition(t, p) for t, n in counts.items() for p in range(n)]
    watermarks = kafka.watermarks(partitions) if partitions else {}
    timestamps: dict[TopicPartition, int | None] = {}
    if with_timestamps:
        unread = {
            tp: offset
            for tp, offset in flatten(checkpoint_offsets).items()
            if tp in watermarks and watermarks[tp].low <= offset < watermarks[tp].high
        }
        timestamps = dict(kafka.record_timestamps(unread)) if unread else {}
    return KafkaView(
        partitions={
            t: {p: watermarks[TopicPartition(t, p)] for p in range(n)} for t, n in counts.items()
        },
        subscribed=wanted,
        first_unread_timestamps_ms=timestamps,
        observed_at_ms=now_ms(),
    )


def health_observation(position: CheckpointPosition, kafka: KafkaFacade) -> Observation:
    """One observation for the health rules: the checkpoint's latest batches and committed
    offsets, and Kafka's end offsets of every partition of the topics it reads."""
    committed = position.committed_offsets or position.planned_offsets
    counts = kafka.topic_partitions(committed) if committed else {}
    partitions = [TopicPartition(t, p) for t, n in counts.items() for p in range(n)]
    ends = {tp: w.high for tp, w in kafka.watermarks(partitions).items()} if partitions else {}
    return Observation(
        at_ms=now_ms(),
        latest_planned=position.latest_planned,
        latest_committed=position.latest_committed,
        committed_offsets=position.committed_offsets,
        end_offsets=nest(ends.items()),
    )


def caught_up(position: CheckpointPosition, end_offsets: TopicOffsets) -> bool:
    """True when the last committed batch read every partition to `end_offsets` and no
    further batch is due: none pending, and the event-time watermark the last batch
    computed has already been applied (so windows it closes were emitted)."""
    if position.pending_batch is not None or position.commit is None or position.planned is None:
        return False
    committed = position.committed_offsets
    read_all = all(
        committed.get(topic, {}).get(partition) == end
        for topic, partitions in end_offsets.items()
        for partition, end in partitions.items()
    )
    watermark_applied = position.planned.watermark_ms == position.commit.next_watermark_ms
    return read_all and watermark_applied


def end_offsets(kafka: KafkaFacade, topics: Iterable[str]) -> TopicOffsets:
    counts = kafka.topic_partitions(topics)
    partitions = [TopicPartition(t, p) for t, n in counts.items() for p in range(n)]
    return nest((tp, w.high) for tp, w in kafka.watermarks(partitions).items())
