"""Settings of the example DAGs, from the environment, so the same files run against the
local stack (`make demo`), in tests, and on a real deployment.

    KAFKASPARK_HOME         folder for checkpoints, savepoints, driver logs and backfill output
                            (default /tmp/kafkaspark)
    KAFKASPARK_STATE_URL    where checkpoints and savepoints go instead, e.g. s3://bucket/jobs
    KAFKASPARK_AWS_CONN_ID  the `aws` connection for a state URL on S3 (default: none, the
                            standard AWS variables)
    KAFKASPARK_SOURCE_TOPIC / KAFKASPARK_SINK_TOPIC   (default ip_count_source / _sink)
    KAFKASPARK_JOB_NAME     (default ip_count)
    KAFKASPARK_RECONCILE_TOPICS  more topics the reconcile DAG checks (comma-separated)
    KAFKASPARK_SPARK_CONN_ID  the `spark` connection drivers are submitted through, e.g. one
                            with master `yarn` and deploy-mode `cluster` (default: none, a
                            local driver on the worker)
    KAFKASPARK_JARS         comma-separated jars a cluster submit ships (the Kafka connector)
    KAFKASPARK_SPARK_CONF   a JSON object of Spark settings added to the job's spec
    KAFKASPARK_RESTART_WINDOW_SCHEDULE / KAFKASPARK_RECONCILE_SCHEDULE
                            cron expressions of the two scheduled DAGs (default "0 3 * * *"
                            and "*/5 * * * *"); "none" leaves them to manual runs
    KAFKASPARK_PERIODIC_SAVEPOINT_SCHEDULE
                            cron expression of the periodic savepoint DAG (default "@hourly",
                            "none": manual runs only)
    KAFKASPARK_SAVEPOINT_MAX_COUNT / KAFKASPARK_SAVEPOINT_MAX_AGE_HOURS
                            retention applied after each periodic savepoint (default 24
                            savepoints, no age limit)
    KAFKASPARK_WATCH_SCHEDULE  cron expression of the watcher DAG (default "@daily": one watch a
                            day; "none": manual runs only)
    KAFKASPARK_WATCH_MAX_LAG_RECORDS / KAFKASPARK_WATCH_MAX_COMMIT_AGE_S
                            the watcher's SLOs (default 10000 records and 300 s; "none" drops one)
    KAFKASPARK_STOP_WAIT_IN_TASK_S
                            how long the stop DAG's task waits for the driver before it
                            defers to the triggerer (default 10; "none": defers at once)
    KAFKASPARK_UPGRADE_TRANSFORMATION / KAFKASPARK_UPGRADE_PYTHON_PATH
                            the transformation (`module:function`) and the folders holding it
                            that the restart window upgrades the job to; default: none, the
                            window restarts the same job (its rollback restores this one)
    KAFKASPARK_COMPAT_CHECK the restart window's compatibility check before the stop
                            (default true; "false" lets an upgrade that the check would
                            refuse reach the health gate and its rollback)
    Airflow connection `kafka_default` (type `kafka`, extra {"bootstrap.servers": ...})

Pure Python: DAG files import this at parse time.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, TypeVar

from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict

N = TypeVar("N", int, float)


@dataclass(frozen=True)
class ExampleSettings:
    home: str
    job_name: str
    source_topic: str
    sink_topic: str
    reconcile_topics: tuple[str, ...] = ()
    upgrade_transformation: str | None = None
    upgrade_python_path: tuple[str, ...] = ()
    state_url: str | None = None
    aws_conn_id: str | None = None
    spark_conn_id: str | None = None
    jars: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)
    restart_window_schedule: str | None = "0 3 * * *"
    reconcile_schedule: str | None = "*/5 * * * *"
    periodic_savepoint_schedule: str | None = "@hourly"
    savepoint_max_count: int | None = 24
    savepoint_max_age_s: float | None = None
    # The restart window hands over to a warm standby driver (two drivers for a while).
    warm_handover: bool = True
    # The restart window checks the new spec against a copy of the running state first.
    compat_check: bool = True
    # The watcher DAG: when a watch starts, and its SLOs.
    watch_schedule: str | None = "@daily"
    watch_max_lag_records: int | None = 10_000
    watch_max_commit_age_s: float | None = 300.0
    # The stop DAG's in-task wait before it defers (None: defer at once).
    stop_wait_in_task_s: float | None = 10.0

    @property
    def checkpoint(self) -> str:
        return f"{self.state_url or self.home}/{self.job_name}/checkpoint"

    @property
    def savepoints(self) -> str:
        return f"{self.state_url or self.home}/{self.job_name}/savepoints"

    @property
    def workdir(self) -> str:
        return f"{self.home}/{self.job_name}/drivers"

    @property
    def backfill_output(self) -> str:
        return f"{self.home}/{self.job_name}/backfill"

    def job_spec(self) -> dict[str, Any]:
        # The servers come from the Kafka connection at submit time.
        spec = job_spec_dict(
            bootstrap_servers="from-connection:9092",
            checkpoint=self.checkpoint,
            job_name=self.job_name,
            source_topic=self.source_topic,
            sink_topic=self.sink_topic,
        )
        spec["lease_ttl_s"] = 10
        if self.spark_conf:
            given = spec.get("spark_conf")
            spec["spark_conf"] = {**(given if isinstance(given, dict) else {}), **self.spark_conf}
        return spec

    def submit_arguments(self) -> dict[str, Any]:
        """Where the submit and restore operators send the driver."""
        return {"spark_conn_id": self.spark_conn_id, "jars": self.jars}

    def upgraded_job_spec(self) -> dict[str, Any]:
        """The job as the restart window restores it: with the upgraded code, if any."""
        spec = self.job_spec()
        if self.upgrade_transformation:
            spec["transformation"] = self.upgrade_transformation
            spec["python_path"] = list(self.upgrade_python_path)
        return spec


def example_settings() -> ExampleSettings:
    return ExampleSettings(
        home=os.environ.get("KAFKASPARK_HOME", "/tmp/kafkaspark").rstrip("/"),
        job_name=os.environ.get("KAFKASPARK_JOB_NAME", "ip_count"),
        source_topic=os.environ.get("KAFKASPARK_SOURCE_TOPIC", "ip_count_source"),
        sink_topic=os.environ.get("KAFKASPARK_SINK_TOPIC", "ip_count_sink"),
        reconcile_topics=tuple(
            t.strip()
            for t in os.environ.get("KAFKASPARK_RECONCILE_TOPICS", "").split(",")
            if t.strip()
        ),
        upgrade_transformation=os.environ.get("KAFKASPARK_UPGRADE_TRANSFORMATION") or None,
        upgrade_python_path=tuple(
            p for p in os.environ.get("KAFKASPARK_UPGRADE_PYTHON_PATH", "").split(os.pathsep) if p
        ),
        state_url=os.environ.get("KAFKASPARK_STATE_URL", "").rstrip("/") or None,
        aws_conn_id=os.environ.get("KAFKASPARK_AWS_CONN_ID") or None,
        spark_conn_id=os.environ.get("KAFKASPARK_SPARK_CONN_ID") or None,
        jars=os.environ.get("KAFKASPARK_JARS") or None,
        spark_conf=_spark_conf(os.environ.get("KAFKASPARK_SPARK_CONF", "")),
        restart_window_schedule=_schedule("KAFKASPARK_RESTART_WINDOW_SCHEDULE", "0 3 * * *"),
        reconcile_schedule=_schedule("KAFKASPARK_RECONCILE_SCHEDULE", "*/5 * * * *"),
        warm_handover=_flag("KAFKASPARK_WARM_HANDOVER", default=True),
        compat_check=_flag("KAFKASPARK_COMPAT_CHECK", default=True),
        periodic_savepoint_schedule=_schedule("KAFKASPARK_PERIODIC_SAVEPOINT_SCHEDULE", "@hourly"),
        savepoint_max_count=_number("KAFKASPARK_SAVEPOINT_MAX_COUNT", int, 24),
        savepoint_max_age_s=_hours_to_s(_number("KAFKASPARK_SAVEPOINT_MAX_AGE_HOURS", float, None)),
        watch_schedule=_schedule("KAFKASPARK_WATCH_SCHEDULE", "@daily"),
        watch_max_lag_records=_number("KAFKASPARK_WATCH_MAX_LAG_RECORDS", int, 10_000),
        watch_max_commit_age_s=_number("KAFKASPARK_WATCH_MAX_COMMIT_AGE_S", float, 300.0),
        stop_wait_in_task_s=_number("KAFKASPARK_STOP_WAIT_IN_TASK_S", float, 10.0),
    )


def _number(variable: str, kind: type[N], default: N | None) -> N | None:
    value = os.environ.get(variable, "").strip()
    if not value:
        return default
    if value.lower() == "none":
        return None
    try:
        number = kind(value)
    except ValueError:
        raise InvalidInputError(f"{variable}={value!r}: a {kind.__name__} or 'none'") from None
    if number <= 0:
        raise InvalidInputError(f"{variable}={value!r}: must be positive")
    return number


def _hours_to_s(hours: float | None) -> float | None:
    return None if hours is None else hours * 3600


def _flag(variable: str, *, default: bool) -> bool:
    value = os.environ.get(variable, "").strip().lower()
    if not value:
        return default
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise InvalidInputError(f"{variable}={value!r}: true or false")
    return value in ("true", "1", "yes")


def _schedule(variable: str, default: str) -> str | None:
    value = os.environ.get(variable, default).strip()
    return None if value.lower() in ("none", "") else value


def _spark_conf(text: str) -> dict[str, str]:
    if not text.strip():
        return {}
    try:
        found = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"KAFKASPARK_SPARK_CONF is not JSON: {exc}") from None
    if not isinstance(found, dict):
        raise InvalidInputError("KAFKASPARK_SPARK_CONF must be a JSON object of Spark settings")
    return {str(k): str(v) for k, v in found.items()}
