"""The errors the lifecycle verbs raise, each a kind of the one mapping in `errors.py`."""

from __future__ import annotations

from airflow_provider_kafkaspark.errors import (
    InvalidInputError,
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


class IncompatibleUpgradeError(InvalidInputError):
    """The new job code failed its compatibility check against the running job's state (a
    state schema, operator or partitioning change, a module that does not import): the
    upgrade would fail the same way, so it is refused before the running job is touched."""


class CompatCheckError(KafkaSparkError):
    """The compatibility check could not decide (its driver died without a report, or did
    not end in time): nothing was learned about the new code, so running it again may."""
