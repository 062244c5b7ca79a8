"""Checkpoints made by real Spark queries with the native Kafka source, for core tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class MadeCheckpoint:
    path: Path
    topic: str
    query_name: str
    records: int


def kafka_stream(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    *,
    max_per_trigger: int | None = None,
    starting_offsets: str = "earliest",
) -> DataFrame:
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", starting_offsets)
    )
    if max_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_per_trigger))
    return reader.load()


def run_stateless(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    checkpoint: Path,
    query_name: str,
    *,
    max_per_trigger: int | None = None,
    starting_offsets: str = "earliest",
) -> None:
    """partition, offset, value of every record, appended per batch to parquet files and
    exposed as the temp view `query_name`.

    foreachBatch rather than the memory sink: the memory sink cannot resume from a
    checkpoint, and resuming is what the restore tests are about.
    """
    out = checkpoint.parent / f"{query_name}-out"

    def append(batch: DataFrame, batch_id: int) -> None:
        batch.selectExpr("*", f"{batch_id} AS batch_id").write.mode("append").parquet(str(out))

    query = (
        kafka_stream(
            spark,
            bootstrap,
            topic,
            max_per_trigger=max_per_trigger,
            starting_offsets=starting_offsets,
        )
        .selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
        .writeStream.foreachBatch(append)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    spark.read.parquet(str(out)).createOrReplaceTempView(query_name)


def run_windowed_count(
    spark: SparkSession, bootstrap: str, topic: str, checkpoint: Path, query_name: str
) -> None:
    """A stateful query: counts per key per 5-second window of the record timestamp."""
    from pyspark.sql import functions as F

    query = (
        kafka_stream(spark, bootstrap, topic, max_per_trigger=700)
        .withWatermark("timestamp", "10 seconds")
        .groupBy(F.window("timestamp", "5 seconds"), F.col("key"))
        .count()
        .writeStream.outputMode("update")
        .format("memory")
        .queryName(query_name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
