"""Which rows a sink task gets must not depend on how Spark numbered the batch's tasks.

The exactly-once sink keys its transactional ids and markers by a slot number, and a replayed
micro-batch must put the same rows in the same slot. Spark's task index does not promise that:
the Kafka source plans one task per topic-partition range in the iteration order of a hash
map, and the replay of batch N (planned from the offsets log) can number the same ranges in
another order than the first attempt did. Seen on this project's local stack: for about one
topic name in three, task 0 of the replay read the partition task 1 of the first attempt had
read, so task 0's marker said "not written" for rows that task 1 had committed (duplicates),
and task 1's marker said "written" for rows nobody had committed (loss).

`task_slots` reads the batch's RDD lineage (through py4j, driver side) and returns a slot
per task index:

- the rows come from a shuffle (an aggregation, a join on keys, `repartition`): the shuffle
  puts the same rows in the same reducer index on every attempt, so the slot is the index;
- the rows come, through narrow one-to-one steps only, from Kafka source ranges: the slot is
  the rank of the task's range, ordered by (topic, partition, first offset), which is the
  same on every attempt of the batch;
- anything else (another source, a union, a coalesce, Spark Connect): None, and the caller
  hash-partitions the rows on their columns, which costs a shuffle but makes the slots
  deterministic.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)

_SHUFFLE = "org.apache.spark.ShuffleDependency"
_ONE_TO_ONE = "org.apache.spark.OneToOneDependency"
_KAFKA_PARTITION = "org.apache.spark.sql.kafka010.KafkaBatchInputPartition"
_MAX_DEPTH = 200


def task_slots(batch: DataFrame) -> list[int] | None:
    """The slot of each task index of `batch`, or None if the lineage does not tell."""
    from py4j.protocol import Py4JError

    try:
        rdd = batch._jdf.queryExecution().toRdd()
        return _slots_of(rdd)
    except (AttributeError, Py4JError) as exc:  # Spark Connect has no JVM objects to read
        log.info("exactly-once sink: cannot read the batch's lineage (%s)", exc)
        return None


def _slots_of(rdd: Any) -> list[int] | None:
    count = int(rdd.getNumPartitions())
    for _ in range(_MAX_DEPTH):
        deps = _seq(rdd.dependencies())
        kinds = {dep.getClass().getName() for dep in deps}
        if deps and kinds == {_SHUFFLE}:
            return list(range(count))
        if not deps:
            return _kafka_range_slots(rdd, count)
        if len(deps) != 1 or kinds != {_ONE_TO_ONE}:
            return None
        rdd = deps[0].rdd()
    return None


def _kafka_range_slots(rdd: Any, count: int) -> list[int] | None:
    ranges: list[tuple[str, int, int]] = []
    for index, partition in enumerate(rdd.partitions()):
        if not hasattr(partition, "inputPartitions"):
            return None
        inputs = _seq(partition.inputPartitions())
        if len(inputs) != 1:
            return None
        # One scan plans all of a DataSourceRDD's input partitions: one class for all.
        if index == 0 and inputs[0].getClass().getName() != _KAFKA_PARTITION:
            return None
        ranges.append(_range_start(inputs[0].offsetRange()))
    if len(ranges) != count or len(set(ranges)) != count:
        return None
    order = sorted(range(count), key=lambda index: ranges[index])
    slots = [0] * count
    for slot, index in enumerate(order):
        slots[index] = slot
    return slots


# KafkaOffsetRange(topicPartition, fromOffset, untilOffset, preferredLoc), a Scala case
# class, prints as `KafkaOffsetRange(<topic>-<partition>,<from>,<until>,<location>)`; topic
# names have no commas.
_OFFSET_RANGE = re.compile(r"KafkaOffsetRange\(([^,]+)-(\d+),(-?\d+),")


def _range_start(offset_range: Any) -> tuple[str, int, int]:
    """(topic, partition, first offset) of a KafkaOffsetRange: one py4j round trip (its
    printed form) instead of four, the per-field calls only if the form is not the known one.
    """
    match = _OFFSET_RANGE.match(str(offset_range.toString()))
    if match:
        return match.group(1), int(match.group(2)), int(match.group(3))
    topic_partition = offset_range.topicPartition()
    return (
        str(topic_partition.topic()),
        int(topic_partition.partition()),
        int(offset_range.fromOffset()),
    )


def _seq(scala_seq: Any) -> list[Any]:
    """A Scala Seq (through py4j) as a list."""
    return [scala_seq.apply(i) for i in range(int(scala_seq.size()))]
