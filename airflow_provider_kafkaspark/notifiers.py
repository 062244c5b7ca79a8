"""Notifiers for `StreamingWatchSensor`'s `on_breach` / `on_clear`, and the context keys the
sensor adds for any notifier: `slo_alert` (the alert as a dict: `kind` "breach" or "clear",
`message`, `slos`, `lag_records`, `lag_by_topic`, `commit_age_s`, `latest_committed`, the
thresholds, `notification`, `breach_s`) and `kafkaspark_job` (the watched job's name), so a
templated notifier such as the SMTP provider's can say, e.g.,
``subject="{{ kafkaspark_job }}: {{ slo_alert.message }}"``."""

from __future__ import annotations

import logging

from airflow.sdk import BaseNotifier, Context

ALERT_KEY = "slo_alert"
JOB_KEY = "kafkaspark_job"
DEFAULT_MESSAGE = "kafkaspark watch of {{ kafkaspark_job }}: {{ slo_alert.message }}"


class LogNotifier(BaseNotifier):
    """Writes one line to the task's log: WARNING for a breach, INFO for its all-clear. Needs
    no service, so the example DAGs page somewhere on any installation; a log-based alerting
    rule (or a person reading the task log) takes it from there.

    :param message: the line, a Jinja template over the task context and the keys above.
    """

    template_fields = ("message",)

    def __init__(self, message: str = DEFAULT_MESSAGE) -> None:
        super().__init__()
        self.message = message

    def notify(self, context: Context) -> None:
        alert = context.get(ALERT_KEY)
        kind = alert.get("kind") if isinstance(alert, dict) else None
        self.log.log(logging.WARNING if kind == "breach" else logging.INFO, "%s", self.message)
