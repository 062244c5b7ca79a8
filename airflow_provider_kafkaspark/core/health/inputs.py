"""What one poll of a health watch reads, in one place for the sensor's poke mode, its
trigger and the deployment's health gate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from airflow_provider_kafkaspark.core.health.rules import Observation
from airflow_provider_kafkaspark.core.health.watch import HealthWatch, WatchDecision

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.core.control.lease import Lease
    from airflow_provider_kafkaspark.core.control.reports import StoppedReport, SupervisorState
    from airflow_provider_kafkaspark.core.control.requests import SubmittedMarker
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade


@dataclass(frozen=True)
class WatchInputs:
    """What one poll reads: cheap reads only (the latest position, four small control files,
    Kafka's end offsets of the partitions the checkpoint reads)."""

    observation: Observation | None
    lease: Lease | None
    stopped: StoppedReport | None
    supervisor: SupervisorState | None = None
    submitted: SubmittedMarker | None = None

    def decide(self, watch: HealthWatch, at_ms: int) -> WatchDecision:
        return watch.observe(
            self.observation,
            self.lease,
            self.stopped,
            at_ms,
            supervisor=self.supervisor,
            submitted=self.submitted,
        )


def read_watch_inputs(checkpoint: str, kafka: KafkaFacade) -> WatchInputs:
    """One poll's inputs (blocking). `observation` is None while the checkpoint does not
    exist yet; a malformed checkpoint or control file raises `InvalidInputError`."""
    from airflow_provider_kafkaspark.core.control.folder import ControlFolder
    from airflow_provider_kafkaspark.core.health.observe import health_observation
    from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader

    control = ControlFolder(checkpoint)
    lease = control.read_lease()
    stopped = control.read_stopped()
    supervisor = control.read_supervisor()
    submitted = control.read_submitted()
    reader = CheckpointReader(checkpoint)
    observation = health_observation(reader.position(), kafka) if reader.exists() else None
    return WatchInputs(observation, lease, stopped, supervisor, submitted)
