"""Look at the known jobs for one page: each job in a thread of its own, through the
connections its tasks used, within a bounded time. A job whose look fails or takes too long
gets a row that says so; the others are shown all the same."""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.overview.facts import JobFacts, KnownJob
from airflow_provider_kafkaspark.core.overview.row import JobRow, job_row

log = logging.getLogger(__name__)

# Each Kafka request of a look; a broker that does not answer leaves the lag unknown.
KAFKA_TIMEOUT_S = 3.0
# Each storage request of a look.
STORAGE_TIMEOUT_S = 3.0
# A page waits this long for all its rows.
PAGE_TIMEOUT_S = 20.0
WORKERS = 8


def job_rows(jobs: list[KnownJob]) -> list[JobRow]:
    """A row per job, in the order given."""
    if not jobs:
        return []
    pool = concurrent.futures.ThreadPoolExecutor(
        max_workers=min(WORKERS, len(jobs)), thread_name_prefix="kafkaspark-view"
    )
    futures = [pool.submit(look_at, job) for job in jobs]
    done, _ = concurrent.futures.wait(futures, timeout=PAGE_TIMEOUT_S)
    # Looks still running finish in the background; the page does not wait for them.
    pool.shutdown(wait=False, cancel_futures=True)
    rows = []
    for job, future in zip(jobs, futures, strict=True):
        if future in done and future.exception() is None:
            rows.append(job_row(future.result()))
        else:
            why = "no answer within the page's time" if future not in done else future.exception()
            rows.append(job_row(_unreadable(job, f"the look failed: {why}")))
    return rows


def look_at(job: KnownJob) -> JobFacts:
    """One job's facts, through its `aws` and `kafka` connections (ids from its tasks)."""
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade
    from airflow_provider_kafkaspark.core.storage.location import s3_options_scope
    from airflow_provider_kafkaspark.errors import KafkaSparkError
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
    from airflow_provider_kafkaspark.lifecycle.overview import observe_job

    with contextlib.ExitStack() as scope:
        try:
            options = KafkaSparkHook(aws_conn_id=job.aws_conn_id).s3fs_options()
        except KafkaSparkError as exc:
            return _unreadable(job, str(exc))
        scope.enter_context(s3_options_scope(fail_fast(options)))
        kafka, kafka_problem = None, None
        try:
            config = KafkaSparkHook(job.kafka_conn_id or "kafka_default").kafka_client_config()
            kafka = scope.enter_context(KafkaFacade(config, timeout_s=KAFKA_TIMEOUT_S))
            del config
        except KafkaSparkError as exc:
            kafka_problem = str(exc)
        facts = observe_job(job, kafka)
    if kafka_problem is not None:
        facts = replace(facts, problems=(*facts.problems, ("kafka", kafka_problem)))
    return facts


def fail_fast(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """s3fs options for a look: one attempt with short timeouts, so that a store that does
    not answer costs a row seconds, not the page its time (a task retries; a page is
    reloaded)."""
    merged: dict[str, Any] = dict(options or {})
    config = dict(merged.get("config_kwargs") or {})
    config.update(
        connect_timeout=STORAGE_TIMEOUT_S,
        read_timeout=STORAGE_TIMEOUT_S,
        retries={"max_attempts": 1, "mode": "standard"},
    )
    merged["config_kwargs"] = config
    return merged


def _unreadable(job: KnownJob, why: str) -> JobFacts:
    return JobFacts(job=job, observed_at_ms=now_ms(), problems=(("control folder", why),))
