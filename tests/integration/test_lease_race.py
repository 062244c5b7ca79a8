"""The lease is a compare-and-set on a real S3 server (SeaweedFS, started by the project's
launcher) and on local disk: two processes race for one checkpoint round after round and
exactly one holds it each round, an expired lease is taken over by exactly one of two
contenders, and a renew after a takeover is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease, now_ms
from airflow_provider_kafkaspark.core.storage.conditional_files import COMPARE_AND_SET
from airflow_provider_kafkaspark.errors import LeaseHeldError

ROUNDS = 50
RENEWS = 150
GAP_S = 0.25


@pytest.fixture(params=["local", "s3"])
def base_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "local":
        return str(tmp_path / "checkpoints")
    return str(request.getfixturevalue("s3_url"))


def expired_lease(at_ms: int) -> Lease:
    # Expired by the store's clock too: a ttl of 1 s, and the race starts 3 s after the write.
    return Lease("e" * 32, "race", "elsewhere", 1, at_ms - 120_000, at_ms - 120_000, 1_000)


def test_two_processes_race_and_exactly_one_holds_each_round(base_url: str) -> None:
    # Odd rounds start from an expired lease (a takeover race), even rounds from none.
    for r in range(1, ROUNDS, 2):
        folder = ControlFolder(f"{base_url}/round-{r}")
        folder.location.write_atomic(json.dumps(asdict(expired_lease(now_ms()))), "lease.json")
    assert ControlFolder(f"{base_url}/round-0").lease_guarantee == COMPARE_AND_SET
    start = time.time() + 3.0  # both processes imported and waiting by then
    command = [sys.executable, "-m", "tests.integration.lease_racer", "--base", base_url]
    command += ["--rounds", str(ROUNDS), "--start", str(start), "--gap", str(GAP_S)]
    racers = [
        subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=dict(os.environ))
        for _ in range(2)
    ]
    outputs = [racer.communicate(timeout=ROUNDS * GAP_S + 120)[0] for racer in racers]
    assert [racer.returncode for racer in racers] == [0, 0], outputs
    results: dict[int, list[str]] = {r: [] for r in range(ROUNDS)}
    for output in outputs:
        for line in output.splitlines():
            round_no, outcome = line.split(" ", 1)
            results[int(round_no)].append(outcome)
    for r, outcomes in results.items():
        winners = [o for o in outcomes if o.startswith("won")]
        assert len(outcomes) == 2 and len(winners) == 1, (r, outcomes)
        # The file holds the winner's lease.
        held = ControlFolder(f"{base_url}/round-{r}").read_lease()
        assert held is not None and held.owner_id == winners[0].split()[1], (r, outcomes)


def test_a_renew_after_a_takeover_is_refused(base_url: str) -> None:
    folder = ControlFolder(f"{base_url}/renew")
    first = Lease.new("job", ttl_ms=2_000)
    folder.acquire_lease(first)
    with pytest.raises(LeaseHeldError, match="held by"):
        folder.acquire_lease(Lease.new("job", ttl_ms=2_000))
    # The storage wrote first's lease over 2 s ago (by its own clock, whole seconds on S3):
    # expired, so a second driver takes over.
    time.sleep(3.5)
    second = Lease.new("job", ttl_ms=2_000)
    taken = folder.acquire_lease(second)
    assert taken is not None and taken.owner_id == first.owner_id
    with pytest.raises(LeaseHeldError, match="taken over by"):
        folder.renew_lease(first)
    held = folder.read_lease()
    assert held is not None and held.owner_id == second.owner_id
    # Releasing someone else's lease leaves it; releasing one's own removes it.
    folder.release_lease(first)
    assert folder.read_lease() is not None
    folder.release_lease(second)
    assert folder.read_lease() is None


def test_a_reader_sees_a_whole_lease_while_the_driver_renews_and_releases_it(
    base_url: str,
) -> None:
    # A sensor polls the lease while the driver replaces it every heartbeat and, at the end,
    # removes it. On S3 a read that asked for the object's ETag and then read with If-Match
    # failed (412) whenever a renew landed in between; a read after a release found nothing.
    folder = ControlFolder(f"{base_url}/renewing")
    lease = Lease.new("job", ttl_ms=30_000)
    folder.acquire_lease(lease)
    stop = threading.Event()
    beats: list[int] = []

    def drive() -> None:
        current = lease
        for _ in range(RENEWS):
            if stop.is_set():
                break
            current = folder.renew_lease(current)
            beats.append(current.heartbeat_at_ms)
        folder.release_lease(current)
        stop.set()

    driver = threading.Thread(target=drive)
    driver.start()
    reader = ControlFolder(f"{base_url}/renewing")
    seen: list[Lease | None] = []
    deadline = time.monotonic() + 120
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            seen.append(reader.read_lease())
    finally:
        stop.set()
        driver.join(timeout=60)
    assert len(beats) > 20, "the driver renewed too seldom for the reads to overlap a renew"
    whole = [s for s in seen if s is not None]
    assert len(whole) > 20 and {s.owner_id for s in whole} == {lease.owner_id}
    assert reader.read_lease() is None
