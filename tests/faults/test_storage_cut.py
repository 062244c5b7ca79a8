"""The driver's host cut off from S3 for 60 s while it holds the lease (ttl 15 s), then
healed: the driver may not renew its lease, so it must stop its query before the ttl ends
(another driver could take the lease by then); its supervisor starts it again, and after the
heal the job goes on from its checkpoint. Nothing lost, nothing twice, one holder at a time."""

from __future__ import annotations

import time

from kafkaspark_devstack.faults import Faults
from tests.cluster.bed_stack import BedStack
from tests.faults.figures import record
from tests.faults.scenario import StreamJob, timed

CUT_S = 60


def test_driver_cut_from_the_object_store(fault_bed: BedStack, faults: Faults) -> None:
    job = StreamJob(fault_bed, "s3cut")
    job.create(seed=81)
    job.submit("d1", max_restarts=6)
    job.wait_committed(0, 300, "a first batch")
    before = job.committed()

    with faults.during(faults.cut("d1", "s3")):
        time.sleep(CUT_S)
    recovered_s = timed(lambda: job.committed() > before, "a batch after the heal", 300)

    stopped = job.finish()
    assert "clean" in stopped["stopped"], stopped
    output = job.output_check()
    history, rewritten = job.history()
    record(
        "driver cut from S3",
        fault_s=CUT_S,
        lease_ttl_s=job.lease_ttl_s,
        **output,
        holders_at_most=history.holders_at_most,
        holders=len(history.owners),
        recover_s=round(recovered_s, 1),
        checkpoint_files_rewritten=len(rewritten),
    )
    assert output["duplicates"] == 0 and output["missing"] == 0, output
    assert history.holders_at_most == 1, history
    assert rewritten == [], rewritten
