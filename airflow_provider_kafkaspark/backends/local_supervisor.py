"""A local supervisor that restarts the job runner under a restart policy.

    python -m airflow_provider_kafkaspark.backends.local_supervisor \
        --spec job.json --master 'local[2]'

It restarts the runner when it failed or died (exit 1, or killed by a signal); a clean stop
(0), a stop that did not drain (2), a live lease elsewhere (3), a bad spec (4), a standby
that no handover reached (5) and a lease taken over while it ran (6) end supervision.
SIGTERM is passed on to the runner, which drains and stops. Its state is kept in the
control folder (`supervisor.json`, `core.control.reports.SupervisorState`): health sensors
read `ended` to fail at once when no restart will come.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from airflow_provider_kafkaspark.core.cluster.restart import (
    FINAL_EXITS,
    RestartBudget,
    RestartPolicy,
)
from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.control.reports import SupervisorState
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

log = logging.getLogger("kafkaspark.supervisor")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--policy", default="{}", help="restart policy JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    spec = JobSpec.load(args.spec)
    policy = RestartPolicy(**json.loads(args.policy))
    budget = RestartBudget(policy)
    control = ControlFolder(spec.checkpoint_location)
    stopping = threading.Event()
    child: subprocess.Popen[bytes] | None = None

    def on_sigterm(signum: int, frame: Any) -> None:
        stopping.set()
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_sigterm)
    attempts = 0
    while True:
        attempts += 1
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "airflow_provider_kafkaspark.spark.runner",
                "--spec",
                args.spec,
                "--master",
                args.master,
            ]
        )
        state = SupervisorState(
            attempt=attempts,
            runner_pid=child.pid,
            started_at_ms=now_ms(),
            policy=policy.to_dict(),
        )
        control.write_supervisor(state)
        code = child.wait()
        state = dataclasses.replace(state, last_exit=code, exited_at_ms=now_ms())
        if stopping.is_set() or code in FINAL_EXITS:
            control.write_supervisor(dataclasses.replace(state, gave_up=False, ended=True))
            log.info("runner exited with %d: supervision ends", code)
            return code
        delay = budget.next_delay(time.monotonic())
        if delay is None:
            control.write_supervisor(dataclasses.replace(state, gave_up=True, ended=True))
            log.error(
                "runner failed %d times within %.0fs: giving up (restart policy %s)",
                policy.max_restarts + 1,
                policy.window_s,
                policy.to_dict(),
            )
            return code
        control.write_supervisor(state)
        log.warning("runner failed (exit %d): restart %d in %.1fs", code, attempts, delay)
        if stopping.wait(delay):
            control.write_supervisor(dataclasses.replace(state, gave_up=False, ended=True))
            return code
        budget.record(time.monotonic())


if __name__ == "__main__":
    sys.exit(main())
