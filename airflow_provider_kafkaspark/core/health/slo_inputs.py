"""What one poll of an SLO watcher reads: a health watch's inputs, the lag per topic and the
last batch's duration. Unlike a health watch's poll, a Kafka that does not answer leaves the
lag unknown rather than skipping the poll: the lease and the stopped report still say whether
the driver is there, and an unknown lag must interrupt an all-clear (`core/health/slo.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from airflow_provider_kafkaspark.core.health.inputs import WatchInputs
from airflow_provider_kafkaspark.core.health.slo import SloFacts

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.core.control.reports import ProgressFile
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade

# The total duration of a batch in Spark's progress (planning, reading, writing, committing).
BATCH_DURATION_KEY = "triggerExecution"


@dataclass(frozen=True)
class WatcherInputs:
    watch: WatchInputs
    latest_committed: int | None
    # None: unknown (Kafka did not answer, no checkpoint, no batch committed yet).
    lag_by_topic: dict[str, int] | None
    batch_duration_ms: int | None = None
    # Why the lag is unknown although a batch was committed (Kafka's error, for the log).
    kafka_error: str | None = None
    # The driver's progress file (None: none, or unreadable): what it says of its lag commits.
    progress: ProgressFile | None = None

    @property
    def facts(self) -> SloFacts:
        return SloFacts(self.latest_committed, self.lag_by_topic)

    @property
    def lag_commit_failures(self) -> int | None:
        """The driver's lag commits failed in a row (0 while they succeed; None: unknown)."""
        return None if self.progress is None else self.progress.lag_commit_failures_in_a_row

    @property
    def lag_commits_failing(self) -> str | None:
        """`lag commits failing since ...`, or None."""
        return None if self.progress is None else self.progress.lag_commits_failing()


def read_watcher_inputs(checkpoint: str, kafka: KafkaFacade) -> WatcherInputs:
    """One poll's inputs (blocking): four small control files, the progress file, the
    checkpoint's latest position, and Kafka's end offsets of the partitions it reads. A
    malformed checkpoint or control file raises `InvalidInputError`; a malformed progress file
    only loses the batch duration."""
    from airflow_provider_kafkaspark.core.control.folder import ControlFolder
    from airflow_provider_kafkaspark.core.health.observe import health_observation
    from airflow_provider_kafkaspark.core.health.slo import lag_by_topic
    from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
    from airflow_provider_kafkaspark.errors import ControlFileError, KafkaUnavailableError

    control = ControlFolder(checkpoint)
    lease = control.read_lease()
    stopped = control.read_stopped()
    supervisor = control.read_supervisor()
    submitted = control.read_submitted()
    try:
        progress = control.read_progress()
    except ControlFileError:
        progress = None
    last = None if progress is None else progress.last_batch
    duration = None if last is None else last.duration_ms.get(BATCH_DURATION_KEY)
    duration_ms = None if duration is None else int(duration)
    reader = CheckpointReader(checkpoint)
    if not reader.exists():
        return WatcherInputs(
            WatchInputs(None, lease, stopped, supervisor, submitted),
            None,
            None,
            duration_ms,
            progress=progress,
        )
    position = reader.position()
    error = None
    try:
        observation = health_observation(position, kafka)
    except KafkaUnavailableError as exc:
        observation, error = None, str(exc)
    lags = None
    if observation is not None and position.latest_committed is not None:
        lags = lag_by_topic(observation.committed_offsets, observation.end_offsets)
    return WatcherInputs(
        WatchInputs(observation, lease, stopped, supervisor, submitted),
        position.latest_committed,
        lags,
        duration_ms,
        error,
        progress=progress,
    )
