"""Driver side: silence a warning Spark 3.5 logs once per Kafka record a Python task reads.

On Spark 3.5 a Python task (the exactly-once sink's `mapInArrow` or RDD tasks) reads the Kafka
source in its writer thread, not in the task's own thread, and Spark's `KafkaDataConsumer`
warns for every record it hands out from such a thread ("is not running in
UninterruptibleThread ... KAFKA-1894"). Measured on the project's machine: 6.2 million log
lines for 6.2 million records, and the sink's tasks waited on the JVM 2.7 s per 250,000 rows
against 1.7 s on Spark 4.0, which reads in the task's thread and does not warn. The warning
says nothing a user can act on per record, so the sink sets that one logger to ERROR in the
driver's JVM, once per SparkContext, and says so. In local mode the executors are that JVM; on a
cluster running Spark 3.5 the executors' log4j2 configuration has to do the same (see
docs/exactly_once_sink.md).
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any

log = logging.getLogger("airflow_provider_kafkaspark.spark.sink")

CONSUMER_LOGGER = "org.apache.spark.sql.kafka010.consumer.KafkaDataConsumer"

# The SparkContexts (each its own JVM) already seen: a driver may stop one and start another.
_seen: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()


def warns_per_record(spark_version: str) -> bool:
    """Whether this Spark release warns once per record a Python task reads from Kafka."""
    major = spark_version.split(".", 1)[0]
    return major.isdigit() and int(major) < 4


def quiet_per_record_warning(session: Any) -> None:
    """Set Spark's Kafka consumer logger to ERROR in this driver's JVM, once per SparkContext,
    on the Spark releases that warn per record; does nothing elsewhere (or on Spark Connect,
    which has no JVM here)."""
    try:
        context = session.sparkContext
        with _lock:
            if context in _seen:
                return
            _seen.add(context)
        version = str(session.version)
        if not warns_per_record(version):
            return
        jvm = context._jvm
        level = jvm.org.apache.logging.log4j.Level.ERROR
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(CONSUMER_LOGGER, level)
    except Exception as exc:  # noqa: BLE001 - a log level must never fail a batch
        log.info("exactly-once sink: could not set %s to ERROR: %s", CONSUMER_LOGGER, exc)
        return
    log.info(
        "exactly-once sink: Spark %s warns once per Kafka record a Python task reads "
        "(KafkaDataConsumer, UninterruptibleThread); %s is set to ERROR in this JVM",
        version,
        CONSUMER_LOGGER,
    )
