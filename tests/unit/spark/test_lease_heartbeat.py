"""The lease heartbeat's timing, with renewals that answer, are refused or hang."""

from __future__ import annotations

import threading
import time

from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.errors import LeaseLostError
from airflow_provider_kafkaspark.spark.lease_heartbeat import LeaseHeartbeat

TTL_S = 0.6


class Driver:
    """What the heartbeat reports to, as the managed query keeps it."""

    def __init__(self) -> None:
        self.renewed_at = time.monotonic()
        self.renewals = 0
        self.lost: list[tuple[str, bool]] = []
        self.lost_after_s: float | None = None

    def renewed(self, lease: Lease) -> None:
        self.renewed_at, self.renewals = time.monotonic(), self.renewals + 1

    def lose(self, why: str, taken_over: bool) -> None:
        self.lost.append((why, taken_over))
        self.lost_after_s = time.monotonic() - self.renewed_at


def run(renew: object, driver: Driver, for_s: float) -> None:
    done = threading.Event()
    heartbeat = LeaseHeartbeat(
        renew=renew,  # type: ignore[arg-type]
        ttl_s=TTL_S,
        renewed_at=driver.renewed_at,
        on_renewed=driver.renewed,
        on_lost=driver.lose,
    )
    thread = threading.Thread(target=heartbeat.run, args=(done,), daemon=True)
    thread.start()
    thread.join(for_s)
    done.set()
    thread.join(5)


def test_renewals_that_answer_keep_the_lease() -> None:
    driver = Driver()
    run(lambda: Lease("me", "job", "h", 1, 0, 0), driver, for_s=2.5)
    assert driver.lost == [] and driver.renewals >= 3


def test_a_refused_renewal_loses_the_lease_to_another_driver() -> None:
    driver = Driver()

    def refused() -> Lease:
        raise LeaseLostError("taken over by driver other")

    run(refused, driver, for_s=2.5)
    assert driver.lost == [("taken over by driver other", True)]


def test_a_renewal_that_hangs_loses_the_lease_within_its_ttl() -> None:
    # A host cut off from its store: the call neither answers nor fails for a long time.
    release = threading.Event()
    driver = Driver()
    try:
        run(lambda: release.wait(30), driver, for_s=5)
    finally:
        release.set()
    assert len(driver.lost) == 1, driver.lost
    why, taken_over = driver.lost[0]
    assert not taken_over and "has not answered" in why
    assert driver.lost_after_s is not None and driver.lost_after_s < TTL_S + 0.5
