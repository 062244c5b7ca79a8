"""Backfill the example job's transformation over past one-minute intervals (catchup).

Each run turns its data interval into per-partition offsets and runs the transformation as
a bounded Spark batch over exactly that range. Re-running an interval replaces its output.
The dates match the seeded events of the demo (`access_events.generate_events`).
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG
from airflow.timetables.interval import CronDataIntervalTimetable

from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.operators.backfill import KafkaBackfillOperator

settings = example_settings()

with DAG(
    dag_id="kafkaspark_backfill",
    schedule=CronDataIntervalTimetable("* * * * *", timezone="UTC"),
    start_date=pendulum.datetime(2023, 11, 14, 22, 14, tz="UTC"),
    end_date=pendulum.datetime(2023, 11, 14, 22, 17, tz="UTC"),
    catchup=True,
    max_active_runs=1,
    tags=["kafkaspark", "example"],
    doc_md=__doc__,
) as dag:
    KafkaBackfillOperator(
        task_id="backfill",
        job_spec=settings.job_spec(),
        output_root=settings.backfill_output,
        kafka_conn_id="kafka_default",
    )
