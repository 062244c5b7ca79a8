"""Drivers as detached processes of the host that submits: Spark local mode (the dev stack)
or client mode against a standalone cluster's master. The reference names the host and the
pid; only that host can tell whether the pid lives or kill it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from airflow_provider_kafkaspark.backends.base import (
    BatchResult,
    JobStatus,
    SubmitOptions,
    Submitted,
)
from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive, reap
from airflow_provider_kafkaspark.core.cluster.job_ref import (
    JobRef,
    LocalJobRef,
    StandaloneJobRef,
    check_local_kill,
    require_backend,
)
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import InvalidArgumentError


class LocalBackend:
    """Drivers started on this host (`master` local[...], or a cluster's in client mode)."""

    name = "local"
    ref_type: type[LocalJobRef] = LocalJobRef

    def __init__(self, master: str = "local[2]") -> None:
        self.master = master

    def check_submit(self, spec: JobSpec) -> None:
        """Java and the connector jars a driver of `spec` started here needs
        (`local_driver.check_driver_parts`), before anything starts."""
        from airflow_provider_kafkaspark.backends.local_driver import check_driver_parts

        check_driver_parts(spec)

    def submit(self, spec: JobSpec, options: SubmitOptions) -> Submitted:
        from airflow_provider_kafkaspark.backends.local_driver import start_local_job

        self.check_submit(spec)
        ref = start_local_job(
            spec,
            options.workdir,
            master=self.master,
            restart_policy=options.restart_policy,
            env=options.env,
            ref_type=self.ref_type,
        )
        return Submitted(ref, launch_details(ref))

    def run_batch(
        self, spec: JobSpec, module: str, args: Sequence[str], *, timeout_s: float
    ) -> BatchResult:
        """A bounded batch driver (a backfill) on this host, run to its end."""
        from airflow_provider_kafkaspark.backends.local_driver import run_batch_driver

        self.check_submit(spec)
        return run_batch_driver(spec, module, args, master=self.master, timeout_s=timeout_s)

    def _local(self, ref: JobRef, action: str) -> LocalJobRef:
        require_backend(ref, self.name, action)
        assert isinstance(ref, LocalJobRef)
        return ref

    def status(self, ref: JobRef) -> JobStatus:
        local = self._local(ref, "observe")
        here = socket.gethostname()
        if local.host != here:
            detail = {"host": local.host, "pid": local.pid, "observed_from": here}
            return JobStatus(local.job_name, self.name, None, "on another host", detail)
        alive = pid_alive(local.pid)
        detail = {"host": local.host, "pid": local.pid, "log_file": local.log_file}
        return JobStatus(local.job_name, self.name, alive, "running" if alive else "gone", detail)

    def alive(self, ref: JobRef) -> bool | None:
        return self.status(ref).alive

    def force_kill(self, ref: JobRef) -> None:
        """SIGKILL the driver's whole process group, as a crash would, and wait until it is
        gone (the one kill path of a local driver: stops past their deadline, tests)."""
        from airflow_provider_kafkaspark.backends.local_driver import started_child

        local = self._local(ref, "kill")
        check_local_kill(local, socket.gethostname())
        try:
            # The launcher's whole group: supervisor, Python driver, JVM, Python workers.
            os.killpg(local.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        child = started_child(local.pid)
        if child is not None:
            # Our own child: waiting on it reaps it and keeps its exit code (-9) for its owner.
            try:
                child.wait(30)
            except subprocess.TimeoutExpired:
                pass
            return
        deadline = time.monotonic() + 30
        while pid_alive(local.pid) and time.monotonic() < deadline:
            reap(local.pid)
            time.sleep(0.2)


def launch_details(ref: LocalJobRef) -> dict[str, Any]:
    """What the submit's handle shows of a local driver besides its reference (the keys
    handles have always had): where its log, spec and working folder are, when it started."""
    return {
        "job_name": ref.job_name,
        "pid": ref.pid,
        "log_file": ref.log_file,
        "spec_file": ref.spec_file,
        "checkpoint": ref.checkpoint,
        "master": ref.master,
        "started_at_ms": ref.started_at_ms,
        "work_dir": ref.work_dir,
    }


class StandaloneBackend(LocalBackend):
    """Client mode against a Spark standalone cluster: the driver is a process of this host,
    its executors run on the cluster's workers. (A standalone master cannot run a Python
    driver in cluster deploy mode.)"""

    name = "standalone"
    ref_type = StandaloneJobRef

    def __init__(self, master: str) -> None:
        if not master.startswith("spark://"):
            raise InvalidArgumentError(
                f"the standalone backend needs a spark://host:port master, got {master!r}"
            )
        super().__init__(master)
