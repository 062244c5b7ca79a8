"""Starting the job runner as a local process (Spark local mode or client mode), detached
from the caller: the local backend's launcher (`backends/local.py`), and the interpreter and
environment a driver of this host gets, and a bounded batch driver (backfill) run to its end.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from airflow_provider_kafkaspark.backends.base import BatchResult, shippable
from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef
from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
from airflow_provider_kafkaspark.core.control.lease import now_ms
from airflow_provider_kafkaspark.core.spec.job_code import driver_python_path
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.storage.private_file import write_private
from airflow_provider_kafkaspark.errors import InvalidInputError
from airflow_provider_kafkaspark.spark.local_session import python_env

# Spark's own settings for the interpreters of a job's driver and of its Python workers.
DRIVER_PYTHON_CONF = "spark.pyspark.driver.python"
WORKER_PYTHON_CONF = "spark.pyspark.python"


def driver_python(spark_conf: Mapping[str, str]) -> str:
    """The interpreter a driver this host starts runs: the job's `spark.pyspark.driver.python`
    (else `spark.pyspark.python`), as spark-submit would take it, else this one. How a job
    runs on another Spark release than the Airflow environment's (a driver environment of
    its own, `scripts/driver_env.sh`)."""
    chosen = spark_conf.get(DRIVER_PYTHON_CONF) or spark_conf.get(WORKER_PYTHON_CONF)
    return chosen or sys.executable


def spec_file_path(spec: JobSpec, workdir: str | os.PathLike[str]) -> Path:
    """Where a driver's spec file goes in `workdir` (created); its log and working folder
    are named after it."""
    folder = Path(workdir)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{spec.job_name}-{time.strftime('%Y%m%dT%H%M%S')}.spec.json"


def write_spec_file(spec: JobSpec, workdir: str | os.PathLike[str]) -> Path:
    """The spec as a file only its owner can read (secrets are not in it: `shippable`)."""
    return write_private(spec_file_path(spec, workdir), spec.to_json())


# Airflow's connections and variables given as environment variables hold secrets (a
# connection's password): the driver gets the ones its job needs, not these.
_SECRET_ENV_PREFIXES = ("AIRFLOW_CONN_", "AIRFLOW_VAR_")


def driver_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without Airflow's connections and variables."""
    source = dict(os.environ if environ is None else environ)
    return {k: v for k, v in source.items() if not k.upper().startswith(_SECRET_ENV_PREFIXES)}


def check_driver_parts(spec: JobSpec) -> None:
    """Raise what a driver of `spec` started on this host would fail on before its first
    batch: no Java 17+, or a jar setting (`$KAFKASPARK_JARS_DIR`) that is unset or lacks an
    artifact of the driver's Spark release (the S3A set too when the checkpoint or the sink is
    on S3). A job that names its own jars (`spark.jars`) needs no jar setting. The driver
    would exit as a bad job (exit 4) for each, after its interpreter and Spark started."""
    from airflow_provider_kafkaspark.spark.jars import find_java, s3a_jars, spark_connector_jars
    from airflow_provider_kafkaspark.spark.object_storage import on_s3

    find_java()
    if spec.spark_conf.get("spark.jars"):
        return
    version = spec.spark_version or driver_spark_version(driver_python(spec.spark_conf))
    spark_connector_jars(None, version)
    if on_s3(spec.checkpoint_location) or on_s3(spec.sink.path):
        s3a_jars(None, version)


def driver_spark_version(python: str) -> str:
    """The pyspark release of the interpreter a driver runs: this one's, or another driver
    environment's, asked once (`scripts/driver_env.sh` makes such environments)."""
    from airflow_provider_kafkaspark.spark.local_session import check_pyspark_version

    if python == sys.executable:
        return check_pyspark_version()
    try:
        proc = subprocess.run(
            [python, "-c", "import pyspark; print(pyspark.__version__)"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InvalidInputError(
            f"job spec field 'spark_conf.{DRIVER_PYTHON_CONF}': the driver's interpreter "
            f"{python} does not run: {exc}"
        ) from exc
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise InvalidInputError(
            f"job spec field 'spark_conf.{DRIVER_PYTHON_CONF}': the driver's interpreter "
            f"{python} has no pyspark: {last[:200]}"
        )
    return proc.stdout.strip()


def run_batch_driver(
    spec: JobSpec, module: str, args: Sequence[str], *, master: str, timeout_s: float
) -> BatchResult:
    """Run `python -m module --spec FILE --master MASTER ARGS...` on this host to its end,
    with the driver's interpreter and environment, its spec in a private temporary file."""
    spec, secrets = shippable(spec, {})
    with tempfile.TemporaryDirectory(prefix="kafkaspark-batch-") as tmp:
        spec_file = write_spec_file(spec, tmp)
        python = driver_python(spec.spark_conf)
        proc = subprocess.run(
            [python, "-m", module, "--spec", str(spec_file), "--master", master, *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env={**driver_environment(), **python_env(master, python), **secrets},
        )
    return BatchResult(proc.returncode, proc.stdout, proc.stderr)


def start_local_job(
    spec: JobSpec,
    workdir: str | os.PathLike[str],
    *,
    master: str = "local[2]",
    env: dict[str, str] | None = None,
    restart_policy: RestartPolicy | None = None,
    ref_type: type[LocalJobRef] = LocalJobRef,
) -> LocalJobRef:
    """Write the spec (mode 0600, its secrets left out for the driver's environment) and start
    the runner in a new session, so it outlives the caller and can be signalled as a group.
    With a restart policy, a supervisor process starts (and restarts) the runner.

    The driver runs in a folder of its own next to its log, not in the caller's (an Airflow
    worker's) working folder; relative local paths in the spec are made absolute first. The
    spec's `python_path` entries are shipped into that folder, as to a cluster's container:
    the driver (and a restart of it) reads them there, not where the caller had them.

    Returns the driver's reference (`ref_type`: a standalone cluster's client-mode driver is a
    local process under its own backend name)."""
    from airflow_provider_kafkaspark.backends.package_archive import ship_python_path

    caller_dir = os.getcwd()
    spec = spec.with_local_paths_absolute(caller_dir)
    spec_file = spec_file_path(spec, Path(caller_dir, workdir))
    log_file = spec_file.with_name(spec_file.name.replace(".spec.json", ".log"))
    work_dir = spec_file.with_name(spec_file.name.replace(".spec.json", ".work"))
    work_dir.mkdir(exist_ok=True)
    spec, _ = ship_python_path(spec, work_dir)
    spec, env = shippable(spec, env or {})
    write_private(spec_file, spec.to_json())
    python = driver_python(spec.spark_conf)
    child_env = {**driver_environment(), **python_env(master, python), **env}
    python_path = driver_python_path(
        spec, _absolute_entries(child_env.get("PYTHONPATH"), caller_dir), str(work_dir)
    )
    if python_path:
        # The driver, its JVM and the Python workers it forks all inherit it.
        child_env["PYTHONPATH"] = python_path
    with open(log_file, "ab") as log:
        command = [python, "-m", "airflow_provider_kafkaspark.spark.runner"]
        if restart_policy is not None:
            # The supervisor runs the runner with its own interpreter: the driver's.
            command = [
                python,
                "-m",
                "airflow_provider_kafkaspark.backends.local_supervisor",
                "--policy",
                json.dumps(restart_policy.to_dict()),
            ]
        proc = subprocess.Popen(
            [*command, "--spec", str(spec_file), "--master", master],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=child_env,
            cwd=work_dir,
            start_new_session=True,
        )
    _children[proc.pid] = proc
    return ref_type(
        job_name=spec.job_name,
        checkpoint=spec.checkpoint_location,
        host=socket.gethostname(),
        pid=proc.pid,
        log_file=str(log_file),
        master=master,
        spec_file=str(spec_file),
        started_at_ms=now_ms(),
        work_dir=str(work_dir),
    )


def _absolute_entries(search_path: str | None, base_dir: str) -> str | None:
    """A PYTHONPATH with relative entries made absolute: the driver runs in another folder."""
    if not search_path:
        return search_path
    entries = search_path.split(os.pathsep)
    return os.pathsep.join(os.path.join(base_dir, e) if e else base_dir for e in entries)


# Our own children, so that waiting reaps them (no zombies answering kill(0)).
_children: dict[int, subprocess.Popen[bytes]] = {}


def started_child(pid: int) -> subprocess.Popen[bytes] | None:
    """The process object of a driver this process started (None for any other pid): waiting
    on it reaps the driver and tells its exit code."""
    return _children.get(pid)
