"""Scratch space of a local-mode driver: one folder per driver process, reaped once its owner
is gone.

Spark in local mode writes its temporary files (`spark-<uuid>/`, `blockmgr-<uuid>/`, a copy of
every `spark.jars` entry under `userFiles-<uuid>/`), the JVM its native libraries, and S3A its
upload buffers under `/tmp`, and deletes them only at a clean JVM exit: a killed driver left
them there, 0.57 GB per crash with state on S3. A driver's folder here is named after its
process (`<job>@<host>.<pid>`, under `<tmp>/kafkaspark-<uid>/`); every local driver's start
removes the folders of this host whose process is gone, so a crash leaves nothing beyond the
next start. The host is in the name because hosts of the test bed
(`kafkaspark_devstack/netbed.py`) share `/tmp` but not their process ids.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from airflow_provider_kafkaspark.core.cluster.host_process import pid_alive

log = logging.getLogger("kafkaspark.scratch")

SCRATCH_ENV = "KAFKASPARK_SCRATCH_DIR"  # a base folder other than the system's temp folder
_NAME = re.compile(r"^(?P<job>.+)@(?P<host>[^@/]+)\.(?P<pid>[0-9]+)$")


def scratch_root(environ: dict[str, str] | None = None) -> Path:
    """`<$KAFKASPARK_SCRATCH_DIR or the temp folder>/kafkaspark-<uid>`: per user, since
    another user's drivers are not ours to reap."""
    source = os.environ if environ is None else environ
    base = source.get(SCRATCH_ENV) or tempfile.gettempdir()
    return Path(base) / f"kafkaspark-{os.getuid()}"


def folder_name(job_name: str, host: str, pid: int) -> str:
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', job_name)}@{host}.{pid}"


def owner(name: str) -> tuple[str, int] | None:
    """(host, pid) of a driver's folder; None for a name that is not one."""
    match = _NAME.match(name)
    return (match.group("host"), int(match.group("pid"))) if match else None


def stale(names: Iterable[str], host: str, alive: Callable[[int], bool]) -> list[str]:
    """The folders of drivers of `host` whose process is gone. Another host's pids mean
    nothing here, and names that are not a driver's are left alone."""
    found = []
    for name in names:
        who = owner(name)
        if who is not None and who[0] == host and not alive(who[1]):
            found.append(name)
    return sorted(found)


def reap(root: Path, alive: Callable[[int], bool] = pid_alive) -> list[Path]:
    """Removes the folders of this host's drivers that are gone; returns them."""
    try:
        names = [entry.name for entry in root.iterdir() if entry.is_dir()]
    except FileNotFoundError:
        return []
    removed = []
    for name in stale(names, socket.gethostname(), alive):
        # A JVM may outlive its Python driver by a moment and still write: what it adds
        # after this is reaped by the next start.
        shutil.rmtree(root / name, ignore_errors=True)
        removed.append(root / name)
    if removed:
        log.info("removed the scratch folders of %d drivers that are gone", len(removed))
    return removed


def driver_scratch(job_name: str, root: Path | None = None) -> Path:
    """This process's scratch folder (created empty, only its owner can read it), after the
    folders of gone drivers were reaped. Removed again when this process exits normally."""
    base = root or scratch_root()
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    reap(base)
    folder = base / folder_name(job_name, socket.gethostname(), os.getpid())
    # A folder of this pid is a dead predecessor's (a reused pid): nothing in it is ours.
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(mode=0o700)
    atexit.register(shutil.rmtree, folder, True)
    return folder
