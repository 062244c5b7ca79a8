"""The exactly-once Kafka sink (`docs/exactly_once_sink.md`), used through `foreachBatch`:

    from airflow_provider_kafkaspark.spark.sink import ExactlyOnceKafkaSink

`driver` is the side that runs in the Spark driver; `task` and `shared_task` run in the
executors' Python workers, with `producer`, `clients` and `rows`; `config` is what the driver
hands the tasks, `schema` the checks of the batch's columns and of the settings, `slots` the
task slots read from the batch's lineage, `fault_points` where crash tests kill the job.

Importing this package stays cheap (no pyspark, no confluent_kafka at import time): DAG files
import the provider, and executors import confluent_kafka themselves.
"""

from airflow_provider_kafkaspark.spark.sink.driver import ExactlyOnceKafkaSink, SinkBatchReport

__all__ = ["ExactlyOnceKafkaSink", "SinkBatchReport"]
