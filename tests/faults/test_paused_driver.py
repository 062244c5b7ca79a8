"""A driver host's processes paused (SIGSTOP, as in a long GC pause or a stolen VM) past the
lease's ttl while a second driver, submitted on another host once the lease expired, takes
over; then resumed. The paused driver must find itself fenced (its renewal is conditional on
the lease version it wrote) and stop without writing the lease, a stopped report or a batch:
S3's versions of the lease file show it never wrote after the other took it, no offset or
commit file was written twice, and the output has no duplicate and no gap."""

from __future__ import annotations

import time
from pathlib import Path

from kafkaspark_devstack.faults import Faults
from tests.cluster.bed_stack import BedStack, wait
from tests.faults.scenario import StreamJob, timed

# Every process of the driver: its supervisor, the runner and Spark's JVM.
DRIVER_PROCESSES = "airflow_provider_kafkaspark|org.apache.spark"


def test_a_driver_paused_past_its_lease_is_fenced_when_it_resumes(
    fault_bed: BedStack, faults: Faults
) -> None:
    job = StreamJob(fault_bed, "paused")
    job.create(seed=87)
    first = job.submit("d1")
    job.wait_committed(0, 300, "a first batch")

    with faults.during(faults.pause("d1", DRIVER_PROCESSES)) as paused:
        expired_s = timed(lambda: not job.lease().get("fresh"), "the lease to expire", 120)
        job.submit("d2")
        before = job.committed()
        job.wait_committed(before, 300, "a batch committed by the driver on d2")
        held_by = job.lease().get("holder", "")
        assert " d2 pid" in held_by, held_by
        paused_s = time.monotonic() - paused.started
    resumed_at = time.monotonic()

    # The resumed driver finds its lease gone and ends for good: its supervisor does not start
    # it again (a restart would wait for the other driver's lease, and take the job back once
    # that driver was stopped). The one on d2 goes on.
    log_file = Path(first["job_ref"]["log_file"])

    def fenced() -> bool:
        return "supervision ends" in log_file.read_text()

    wait("the resumed driver to find itself fenced and end", fenced, 90)
    fenced_s = time.monotonic() - resumed_at
    assert "lease lost" in log_file.read_text()

    def left_on_d1() -> list[str]:
        found = fault_bed.bed.run("d1", ["pgrep", "-f", DRIVER_PROCESSES], timeout=10)
        return found.stdout.split()

    # Its JVM and Python workers end a moment after the supervisor's last line.
    try:
        wait("the fenced driver's processes to end", lambda: not left_on_d1(), 60, 1)
    except TimeoutError:
        ps = fault_bed.bed.run("d1", ["ps", "-o", "pid,args", "-p", ",".join(left_on_d1())])
        raise AssertionError(f"processes of the fenced driver still on d1:\n{ps.stdout}") from None
    after = job.committed()
    job.more()
    job.wait_committed(after, 120, "the driver on d2 still committing")
    assert " d2 pid" in job.lease().get("holder", "")

    history = job.conclude(
        "driver paused past its lease",
        fault_s=round(paused_s, 1),
        recover_s=round(expired_s, 1),
        fenced_after_resume_s=round(fenced_s, 1),
    )
    assert len(history.owners) == 2, history  # the driver on d1, then the one on d2
