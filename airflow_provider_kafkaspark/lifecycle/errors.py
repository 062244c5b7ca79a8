"""The errors the lifecycle verbs raise, each a kind of the one mapping in `errors.py`."""

from __future__ import annotations

from airflow_provider_kafkaspark.errors import (
    KafkaSparkError,
    LeaseHeldError,
    RefusedError,
    SavepointError,
)


class JobRunningError(LeaseHeldError):
    """A live driver holds the job's checkpoint and the caller asked not to replace it."""


class StopTimeoutError(RefusedError):
    """The driver did not stop within the bound and a forced kill was not allowed."""


class RestoreRefusedError(SavepointError):
    """Verification or reconciliation found something that blocks the restore."""


class BackfillError(KafkaSparkError):
    """The bounded batch run failed."""
