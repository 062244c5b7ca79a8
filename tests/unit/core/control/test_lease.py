"""The lease's pure rules: who may take a lease over, from what a starting driver observed."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from airflow_provider_kafkaspark.core.control.lease import Lease, later_attempt, takeover_step


def lease(owner: str, at_ms: int, ttl_ms: int = 10_000) -> Lease:
    return Lease(owner, "job", "host", 1, at_ms, at_ms, ttl_ms)


def attempt_lease(owner: str, attempt: str, app: str = "application_1_0001") -> Lease:
    return replace(lease(owner, T), application_id=app, attempt_id=attempt)


T = 1_000_000


def test_takeover_step_from_what_was_observed() -> None:
    mine = attempt_lease("me", "2")
    step = partial(takeover_step, mine=mine, at_ms=T + 1_000)
    assert step(None, unchanged_for_ms=0, renewed_while_watched=False) == "take"
    held = attempt_lease("old", "1")
    # An earlier attempt of my application: the cluster manager ended it before starting me.
    assert step(held, unchanged_for_ms=0, renewed_while_watched=False) == "take"
    # Another application's fresh lease: wait, refuse once seen renewed, take once it stayed
    # unchanged for its ttl by my clock (whatever the holder's clock says).
    other = attempt_lease("other", "1", app="application_1_0002")
    assert step(other, unchanged_for_ms=5_000, renewed_while_watched=False) == "wait"
    assert step(other, unchanged_for_ms=5_000, renewed_while_watched=True) == "refuse"
    assert step(other, unchanged_for_ms=30_001, renewed_while_watched=False) == "take"
    assert step(other, unchanged_for_ms=0, renewed_while_watched=True, holder_stopped=True) == (
        "take"
    )
    assert step(other, unchanged_for_ms=0, renewed_while_watched=False, holder_gone=True) == (
        "take"
    )
    # Expired by the wall clock, as before.
    assert (
        takeover_step(
            other, mine, unchanged_for_ms=0, renewed_while_watched=False, at_ms=T + 31_000
        )
        == "take"
    )
    # A later attempt never hands its lease to an earlier one, nor do attempts without ids.
    assert not later_attempt(attempt_lease("new", "3"), mine)
    assert not later_attempt(replace(held, attempt_id=None), mine)
    assert not later_attempt(held, replace(mine, attempt_id="x"))


def test_another_pod_of_the_drivers_kubernetes_job_is_over() -> None:
    # The Job creates a driver pod only once the one before has failed: a restarted pod takes
    # the lease at once, as a later YARN attempt does, whatever the pods' uids.
    app = "k8s-job:5e0c7f3e"
    held = attempt_lease("old-pod", "b7f0", app=app)
    mine = attempt_lease("new-pod", "a1c2", app=app)
    assert later_attempt(held, mine)
    assert takeover_step(held, mine, unchanged_for_ms=0, renewed_while_watched=True) == "take"
    # Its own pod is not another attempt; another Job's pod is another application.
    assert not later_attempt(held, replace(mine, attempt_id="b7f0"))
    other_job = attempt_lease("other", "b7f0", app="k8s-job:9999")
    assert not later_attempt(other_job, mine)
    step = partial(takeover_step, mine=mine, unchanged_for_ms=0, at_ms=T + 1_000)
    assert step(other_job, renewed_while_watched=True) == "refuse"


def test_a_lease_the_storage_saw_written_recently_is_fresh_whatever_the_clocks_say() -> None:
    # Read on a host whose clock runs 60 s ahead of the holder's (or from a holder whose
    # clock runs behind): the heartbeat time looks a minute old, the storage wrote it 2 s ago.
    mine = lease("me", T + 60_000)
    held = replace(lease("holder", T), observed_age_ms=2_000)
    assert held.is_fresh(T + 60_000) and held.age_ms(T + 60_000) == 2_000
    step = partial(takeover_step, mine=mine, at_ms=T + 60_000)
    assert step(held, unchanged_for_ms=0, renewed_while_watched=False) == "wait"
    assert step(held, unchanged_for_ms=3_000, renewed_while_watched=True) == "refuse"
    # And the other way: a heartbeat time from a clock ahead does not keep a lease alive that
    # the storage has not seen renewed for longer than its ttl.
    stale = replace(lease("holder", T + 120_000), observed_age_ms=11_000)
    assert step(stale, unchanged_for_ms=0, renewed_while_watched=False) == "take"
    assert "observed_age_ms" not in stale.as_written()
