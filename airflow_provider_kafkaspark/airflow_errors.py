"""The one translation of this package's errors into Airflow's, for every operator, sensor
and deferral callback.

- Permanent: bad input (a spec, an argument, a file, a URL, a topic that does not exist),
  authentication and authorization, and refusals (a live lease, a restore that verification
  or reconciliation blocks, a stop that would need a forced kill that is not allowed) ->
  `AirflowFailException`, so Airflow does not retry what cannot succeed.
- A submit asked to skip a running job -> `AirflowSkipException`.
- Kafka unavailable, and any other error of this package -> `AirflowException`, which
  Airflow retries as the task's `retries` say.

Messages carry no connection secret: the core composes them from names and codes only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowSkipException

from airflow_provider_kafkaspark.errors import (
    InvalidInputError,
    JobSkippedError,
    KafkaAccessError,
    KafkaSparkError,
    RefusedError,
)

PERMANENT: tuple[type[KafkaSparkError], ...] = (InvalidInputError, RefusedError)


def is_permanent(exc: BaseException) -> bool:
    return isinstance(exc, PERMANENT)


def to_airflow(
    exc: KafkaSparkError, what: str, kafka_conn_id: str | None = None
) -> AirflowException:
    text = str(exc)
    if kafka_conn_id and isinstance(exc, KafkaAccessError):
        # A refused login or handshake: which connection to fix, the core cannot know.
        text = f"Kafka connection {kafka_conn_id!r}: {text}"
    message = f"{what}: {text}" if what else text
    if isinstance(exc, JobSkippedError):
        return AirflowSkipException(message)
    if is_permanent(exc):
        return AirflowFailException(message)
    return AirflowException(message)


@contextmanager
def airflow_errors(what: str, kafka_conn_id: str | None = None) -> Iterator[None]:
    """Run a task step; this package's errors leave it as Airflow's (see the module doc).
    Airflow's own exceptions (skip, defer, fail) and other errors pass through unchanged. A
    Kafka refusal names `kafka_conn_id`, the connection to fix."""
    try:
        yield
    except KafkaSparkError as exc:
        raise to_airflow(exc, what, kafka_conn_id) from exc
