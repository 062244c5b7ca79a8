"""Clocks that disagree across hosts. The lease's expiry must not depend on comparing the
holder's clock with a reader's: a driver host whose clock runs 2x the ttl ahead must not
take a live lease (nor its submit see the job as not running), a holder whose clock runs 2x
the ttl behind must not look dead, and an Airflow worker whose clock runs ahead must see the
lease live. Before the lease's age came from the store's clock, each of these saw the live
lease as expired and the skewed submit started a second driver that took it."""

from __future__ import annotations

import shutil
import sys

from kafkaspark_devstack.faults import Faults, clock_env
from tests.cluster.bed_stack import BedStack
from tests.faults.scenario import StreamJob


def refused_submit(job: StreamJob, host: str, env: dict[str, str]) -> str:
    """A second submit of a running job on `host`: it must refuse; its message."""
    try:
        answer = job.submit(host, env=env)
    except AssertionError as exc:  # BedStack.on: a non-zero exit, with both streams
        assert "is running" in str(exc), exc
        return str(exc).splitlines()[-1]
    raise AssertionError(f"a submit on {host} started a second driver: {answer}")


def refused_driver_exit(
    stack: BedStack, job: StreamJob, spec_file: str, env: dict[str, str]
) -> int:
    """Run a driver of `job` on d2 with `env` (its own copy of the spec); its exit code."""
    copy = stack.bed.folder("d2") / "driver-spec.json"
    shutil.copyfile(spec_file, copy)
    argv = [sys.executable, "-m", "airflow_provider_kafkaspark.spark.runner", "--spec", str(copy)]
    here = {**stack.base_env, **job.env(env), "KAFKASPARK_LOCAL_HOST": stack.addr["d2"]}
    done = stack.bed.run("d2", [*argv, "--master", "local[2]"], env=here, timeout=240)
    assert done.returncode == 3, (
        f"exit {done.returncode}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    )
    return done.returncode


def test_clocks_ahead_and_behind_leave_the_live_lease_alone(
    fault_bed: BedStack, faults: Faults
) -> None:
    job = StreamJob(fault_bed, "clocks")
    skew_ms = 2 * job.lease_ttl_s * 1000
    path = fault_bed.base_env["PYTHONPATH"]
    ahead, behind = clock_env(skew_ms / 1000, path), clock_env(-skew_ms / 1000, path)
    job.create(seed=83)

    # The holder's clock runs behind: its heartbeat times look 2x the ttl old to everyone.
    first = job.submit("d1", env=behind)
    job.wait_committed(0, 300, "a first batch")
    seen = {
        "worker": job.lease("worker"),
        "worker, clock ahead": job.lease("worker", env=ahead),
        "d2, clock ahead": job.lease("d2", env=ahead),
    }
    stale = {where: lease for where, lease in seen.items() if not lease.get("fresh")}
    assert not stale, f"a live lease looked expired: {stale}"

    # A second submit: from a host whose clock is right, and from one whose clock runs ahead.
    refusals = [refused_submit(job, "d2", {}), refused_submit(job, "d2", ahead)]
    # A driver started on the host whose clock runs ahead, past any submit's check (as a
    # cluster manager's restart starts one): it must see the lease renewed and refuse (exit 3).
    refused_driver = refused_driver_exit(fault_bed, job, first["job_ref"]["spec_file"], ahead)
    before = job.committed()
    job.more()
    job.wait_committed(before, 120, "the holder still committing")

    history = job.conclude(
        "clocks 2x ttl ahead and behind",
        skew_s=skew_ms / 1000,
        second_submits_refused=len(refusals),
        skewed_driver_exit=refused_driver,
    )
    assert len(history.owners) == 1, history  # nobody took the live lease
