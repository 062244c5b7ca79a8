"""Watch the example job (`kafkaspark_deploy`'s) for as long as it runs, and page when it falls
behind: more than 10,000 records waiting, or records waiting 5 minutes without a batch
committing (KAFKASPARK_WATCH_MAX_LAG_RECORDS and KAFKASPARK_WATCH_MAX_COMMIT_AGE_S change
them). A breach is announced once, again after 30 minutes if it goes on, then after an hour,
two, four; the all-clear once both SLOs have been met for a minute.

One run watches for a day and then ends, a success: the next day's run watches on
(KAFKASPARK_WATCH_SCHEDULE="none" leaves it to manual runs). The watcher costs the triggerer
one poll every 30 s and a worker a few seconds per alert. It also ends, as a success, when
the job is stopped cleanly (`kafkaspark_stop`) and no driver comes back within 5 minutes
(a restart window's new driver is followed), and fails when the driver is gone otherwise
(crashed, lease expired, a bad job): its retries then watch a driver that came back. While
it watches, it sends the job's lag, seconds since its last commit and batch duration as
Airflow metrics (`kafkaspark.<job>.*`), when `[metrics]` is configured.

The alerts go to the task log (`LogNotifier`); with KAFKASPARK_ALERT_EMAIL set, also by mail
through the SMTP provider's notifier and its `smtp_default` connection.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.notifiers import LogNotifier
from airflow_provider_kafkaspark.sensors.watch import Notifier, StreamingWatchSensor

settings = example_settings()

notifiers: list[Notifier] = [LogNotifier()]
if os.environ.get("KAFKASPARK_ALERT_EMAIL"):
    from airflow.providers.smtp.notifications.smtp import SmtpNotifier

    notifiers.append(
        SmtpNotifier(
            to=os.environ["KAFKASPARK_ALERT_EMAIL"],
            subject="{{ kafkaspark_job }}: {{ slo_alert.message[:120] }}",
            html_content="<p>{{ slo_alert.message }}</p><p>{{ slo_alert | tojson }}</p>",
        )
    )

with DAG(
    dag_id="kafkaspark_watch",
    schedule=settings.watch_schedule,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["kafkaspark", "example"],
    doc_md=__doc__,
) as dag:
    StreamingWatchSensor(
        task_id="watch_slos",
        checkpoint=settings.checkpoint,
        job_name=settings.job_name,
        aws_conn_id=settings.aws_conn_id,
        kafka_conn_id="kafka_default",
        max_lag_records=settings.watch_max_lag_records,
        max_commit_age_s=settings.watch_max_commit_age_s,
        renotify_after_s=1800,
        on_breach=notifiers,
        on_clear=notifiers,
        deferrable=True,
        timeout=24 * 3600,
        retries=3,
        retry_delay=timedelta(minutes=2),
    )
