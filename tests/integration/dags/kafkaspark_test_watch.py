"""A watcher DAG for tests/integration/test_slo_watcher.py: the example watcher's sensor over
a job the test starts, with a notifier that appends each announcement to a file the test
reads while the DAG runs. Settings come from the environment the test gives `airflow dags
test`."""

from __future__ import annotations

import json
import os

import pendulum
from airflow.sdk import DAG, BaseNotifier, Context

from airflow_provider_kafkaspark.sensors.watch import StreamingWatchSensor


class FileNotifier(BaseNotifier):
    """Appends one JSON line per announcement: the rendered template and the alert."""

    template_fields = ("line",)

    def __init__(self, path: str, line: str) -> None:
        super().__init__()
        self.path = path
        self.line = line

    def notify(self, context: Context) -> None:
        alert = context["slo_alert"]  # type: ignore[typeddict-item]
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"line": self.line, "alert": alert}) + "\n")


notifications = os.environ.get("KAFKASPARK_WATCH_NOTIFICATIONS", "/tmp/kafkaspark-watch.jsonl")
line = "{{ kafkaspark_job }} {{ slo_alert.kind }} lag={{ slo_alert.lag_records }}"

with DAG(
    dag_id="kafkaspark_test_watch",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["kafkaspark", "test"],
) as dag:
    StreamingWatchSensor(
        task_id="watch_slos",
        checkpoint=os.environ.get(
            "KAFKASPARK_WATCH_CHECKPOINT", "/tmp/kafkaspark-watch/checkpoint"
        ),
        kafka_conn_id="kafka_default",
        max_lag_records=int(os.environ.get("KAFKASPARK_WATCH_MAX_LAG", "1000")),
        breach_after_s=0,
        clear_after_s=2,
        # Longer than the test: the breach is announced once however many polls see it.
        renotify_after_s=3600,
        on_breach=FileNotifier(notifications, line),
        on_clear=FileNotifier(notifications, line),
        poll_interval_s=1,
        startup_grace_s=30,
        # The test stops the job for good: the watch ends soon after, not 5 minutes later.
        restart_grace_s=3,
        deferrable=True,
        timeout=600,
    )
