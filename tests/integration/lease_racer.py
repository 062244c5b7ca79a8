"""One contender of the lease race (tests/integration/test_lease_race.py), run as its own
process: round r starts at `start + r * gap` seconds (wall clock, shared by both contenders),
and takes the lease of checkpoint `<base>/round-<r>`. Prints `<r> won` or `<r> lost: why`."""

from __future__ import annotations

import argparse
import time

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import Lease
from airflow_provider_kafkaspark.errors import LeaseHeldError


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--start", type=float, required=True)
    parser.add_argument("--gap", type=float, required=True)
    args = parser.parse_args()
    for r in range(args.rounds):
        folder = ControlFolder(f"{args.base}/round-{r}")
        lease = Lease.new("race", ttl_ms=60_000)
        delay = args.start + r * args.gap - time.time()
        if delay > 0:
            time.sleep(delay)
        try:
            folder.acquire_lease(lease)
        except LeaseHeldError as exc:
            print(f"{r} lost: {exc}", flush=True)
        else:
            print(f"{r} won {lease.owner_id}", flush=True)


if __name__ == "__main__":
    main()
