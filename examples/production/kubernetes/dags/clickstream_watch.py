"""Watch the clickstream job for a day and page when it falls behind: more than 50,000 clicks
waiting, or clicks waiting 5 minutes without a batch committing. A breach is announced
once, again after 30 minutes if it goes on (then after an hour, two, four), and the
all-clear once both are met for a minute.

The watch waits in the triggerer (one poll every 30 s). It ends, a success, after a day
(the next day's run watches on) or when the job is stopped cleanly and no driver comes back
within 5 minutes; it fails when the driver is gone otherwise (crashed for good, a bad job),
and its retries then watch whatever driver comes back.

The alerts go to the task log; add your own notifier (the Slack or SMTP provider's) to
`on_breach` and `on_clear`.
"""

from __future__ import annotations

from datetime import timedelta

import clickstream_settings as job
import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.notifiers import LogNotifier
from airflow_provider_kafkaspark.sensors.watch import StreamingWatchSensor

with DAG(
    dag_id="clickstream_watch",
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["clickstream", "kafkaspark", "kubernetes"],
    doc_md=__doc__,
) as dag:
    StreamingWatchSensor(
        task_id="watch",
        checkpoint=job.CHECKPOINT,
        job_name=job.JOB_NAME,
        kafka_conn_id=job.KAFKA_CONN_ID,
        aws_conn_id=job.AWS_CONN_ID,
        max_lag_records=50_000,
        max_commit_age_s=300,
        renotify_after_s=1800,
        on_breach=[LogNotifier()],
        on_clear=[LogNotifier()],
        deferrable=True,
        timeout=24 * 3600,
        retries=3,
        retry_delay=timedelta(minutes=2),
    )
