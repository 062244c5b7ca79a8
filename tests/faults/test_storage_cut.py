"""The driver's host cut off from S3 for 60 s while it holds the lease (ttl 15 s), then
healed: the driver may not renew its lease, so it must stop its query before the ttl ends
(another driver could take the lease by then); its supervisor starts it again, and after the
heal the job goes on from its checkpoint. Nothing lost, nothing twice, one holder at a time."""

from __future__ import annotations

import time

from kafkaspark_devstack.faults import Faults
from tests.cluster.bed_stack import BedStack
from tests.faults.scenario import StreamJob, timed

CUT_S = 60


def test_driver_cut_from_the_object_store(fault_bed: BedStack, faults: Faults) -> None:
    job = StreamJob(fault_bed, "s3cut")
    job.create(seed=81)
    job.submit("d1", max_restarts=6)
    job.wait_committed(0, 300, "a first batch")
    holder = job.lease().get("holder")
    with faults.during(faults.cut("d1", "s3")):
        time.sleep(CUT_S)
    healed_committed = job.committed()

    def restarted() -> bool:
        now = job.lease().get("holder")
        return now not in (None, holder) and job.committed() > healed_committed

    # The driver gave its lease up during the cut; its restart holds it after the heal and
    # commits the next batch.
    recovered_s = timed(restarted, "a batch of the restarted driver after the heal", 300)

    job.conclude(
        "driver cut from S3",
        fault_s=CUT_S,
        recover_s=round(recovered_s, 1),
    )
