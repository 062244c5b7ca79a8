"""The driver's host cut off from Kafka for 60 s, then healed: the lease stays with the driver
(it still reaches S3), batches stall and resume, and the exactly-once sink's transactions
that the cut left open are aborted or finished. Nothing lost, nothing twice."""

from __future__ import annotations

import time

from kafkaspark_devstack.faults import Faults
from tests.cluster.bed_stack import BedStack
from tests.faults.figures import record
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

    stopped = job.finish()
    assert "clean" in stopped["stopped"], stopped
    output = job.output_check()
    history, rewritten = job.history()
    record(
        "driver cut from Kafka",
        fault_s=CUT_S,
        lease_ttl_s=job.lease_ttl_s,
        **output,
        holders_at_most=history.holders_at_most,
        holders=len(history.owners),
        recover_s=round(recovered_s, 1),
        checkpoint_files_rewritten=len(rewritten),
    )
    assert lease_during.get("fresh"), lease_during  # the driver kept its lease through the cut
    assert output["duplicates"] == 0 and output["missing"] == 0, output
    assert history.holders_at_most == 1, history
    assert rewritten == [], rewritten
