"""The driver's host cut off from Kafka for 60 s, then healed: the lease stays with the driver
(it still reaches S3), batches stall and resume, and the exactly-once sink's transactions
that the cut left open are aborted or finished. Nothing lost, nothing twice."""

from __future__ import annotations

import time

from kafkaspark_devstack.faults import Faults
from tests.cluster.bed_stack import BedStack
from tests.faults.scenario import StreamJob, timed

CUT_S = 60


def test_driver_cut_from_kafka(fault_bed: BedStack, faults: Faults) -> None:
    job = StreamJob(fault_bed, "kafkacut")
    job.create(seed=85)
    job.submit("d1", max_restarts=6)
    job.wait_committed(0, 300, "a first batch")

    with faults.during(faults.cut("d1", "kafka")):
        time.sleep(CUT_S / 2)
        lease_during = job.lease("worker")
        time.sleep(CUT_S / 2)
        stalled_at = job.committed()
    recovered_s = timed(lambda: job.committed() > stalled_at, "a batch after the heal", 300)

    job.conclude(
        "driver cut from Kafka",
        fault_s=CUT_S,
        recover_s=round(recovered_s, 1),
    )
    assert lease_during.get("fresh"), lease_during  # the driver kept its lease through the cut
