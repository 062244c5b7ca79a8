"""The clickstream job's transformation over each past hour, as a bounded Spark batch over
exactly that hour's offsets (Kafka's offsets for the hour's record timestamps), written as
Parquet to `<backfill output>/interval=<start ms>-<end ms>/`, the folder replaced on a re-run.

Each hour exports the hour before. To recompute past hours (after a fix of the job's code):

    airflow backfill create --dag-id clickstream_backfill \
        --from-date 2026-03-01T00:00:00+00:00 --to-date 2026-03-01T05:00:00+00:00 \
        --reprocess-behavior completed

The batch runs in the Airflow worker that runs the task (Spark local mode), not as pods of
the jobs' namespace: that worker needs Java 17, `KAFKASPARK_JARS_DIR` with the connector and
S3A jars, and S3 credentials in its environment (a workload identity, or the standard AWS
variables).
"""

from __future__ import annotations

import clickstream_settings as job
import pendulum
from airflow.sdk import DAG
from airflow.timetables.interval import CronDataIntervalTimetable

from airflow_provider_kafkaspark.operators.backfill import KafkaBackfillOperator

with DAG(
    dag_id="clickstream_backfill",
    schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["clickstream", "kafkaspark", "kubernetes"],
    doc_md=__doc__,
) as dag:
    KafkaBackfillOperator(
        task_id="backfill",
        job_spec=job.job_spec(),
        output_root=job.BACKFILL_OUTPUT,
        kafka_conn_id=job.KAFKA_CONN_ID,
        master="local[2]",
        timeout_s=3600,
        on_execute_callback=job.job_code_on_pythonpath,
    )
