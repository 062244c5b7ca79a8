"""One Airflow deployment on hosts of the bed, as the Airflow bed tests stand it up: PostgreSQL
and the api-server, scheduler and dag-processor on the `airflow` host, the other components
(a triggerer, Edge workers) where a test starts them, every host sharing one environment
(`shared_environment`) with the connections of the bed's Kafka, S3 and YARN and the example
DAGs' settings for one job. DAG runs are triggered and read through the api-server's REST API
from the `ops` host (`tests/cluster/airflow_rest.py`), as a person would."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.spark.local_session import spark_jars_option
from kafkaspark_devstack.airflow_services import new_shared_secrets, shared_environment
from tests.cluster.bed_stack import BUCKET, KAFKASPARK, BedStack

REST = [sys.executable, "-m", "tests.cluster.airflow_rest"]
CORE = ("api-server", "scheduler", "dag-processor")


@contextmanager
def postgres_folder() -> Iterator[Path]:
    """PostgreSQL runs as `nobody`, who cannot enter pytest's private temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="kafkaspark-bed-pg-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class AirflowOnBed:
    """`AirflowOnBed(stack, pg_dir, dags, job=..., source=..., sink=..., bootstrap=...)`,
    then `start_core()`, `start(host, component)`, `dag_run(dag_id)`, `stop_all()`."""

    def __init__(
        self,
        stack: BedStack,
        pg_dir: Path,
        dags: Path,
        *,
        job: str,
        source: str,
        sink: str,
        bootstrap: str,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.stack = stack
        self.pg_dir = pg_dir
        shared = shared_environment(
            database_url="postgresql+psycopg2://postgres@airflow:5432/airflow",
            api_host="airflow",
            dags_folder=str(dags),
            keys=new_shared_secrets(),
        )
        kafka_conn = {"conn_type": "kafka", "extra": {"bootstrap.servers": bootstrap}}
        self.env: dict[str, str] = {
            **shared,
            "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True",
            "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps(kafka_conn),
            "AIRFLOW_CONN_AWS_BED": json.dumps(stack.s3_connection),
            "AIRFLOW_CONN_SPARK_YARN": json.dumps(stack.spark_connection),
            "KAFKASPARK_STATE_URL": f"s3://{BUCKET}/jobs",
            "KAFKASPARK_AWS_CONN_ID": "aws_bed",
            "KAFKASPARK_JOB_NAME": job,
            "KAFKASPARK_SOURCE_TOPIC": source,
            "KAFKASPARK_SINK_TOPIC": sink,
            "KAFKASPARK_SPARK_CONN_ID": "spark_yarn",
            "KAFKASPARK_JARS": spark_jars_option(s3a=True),
            "KAFKASPARK_SPARK_CONF": json.dumps({"spark.sql.shuffle.partitions": "2"}),
            **(settings or {}),
        }
        self.running: list[tuple[str, str]] = []

    def component(self, host: str, action: str, component: str) -> None:
        """`kafkaspark local airflow start|stop COMPONENT` on `host`."""
        bed = self.stack.bed
        env = {
            **self.env,
            **self.stack.client_env.get(host, {}),
            "KAFKASPARK_HOME": str(bed.folder(host) / "kafkaspark"),
        }
        folder = str(bed.folder(host) / "airflow")
        argv = [KAFKASPARK, "local", "airflow", action, component, "--dir", folder]
        self.stack.on(host, argv, env=env)
        if action == "start":
            self.running.append((host, component))
        elif (host, component) in self.running:
            self.running.remove((host, component))

    def start(self, host: str, component: str) -> None:
        self.component(host, "start", component)

    def stop(self, host: str, component: str) -> None:
        self.component(host, "stop", component)

    def forget(self, host: str) -> None:
        """The host lost power: nothing of it is left to stop."""
        self.running = [(h, c) for h, c in self.running if h != host]

    def start_core(self) -> None:
        """The database and the services of the `airflow` host."""
        on = self.stack.on
        postgres = [KAFKASPARK, "local", "postgres", "start", "--dir", str(self.pg_dir)]
        on("airflow", [*postgres, "--database", "airflow"])
        migrate = [str(Path(sys.executable).parent / "airflow"), "db", "migrate"]
        on("airflow", migrate, env=self.env)
        for component in CORE:
            self.start("airflow", component)

    def stop_all(self) -> None:
        """Every component still running, the last started first, then the database."""
        for host, component in reversed(list(self.running)):
            self.stop(host, component)
        self.stack.on(
            "airflow", [KAFKASPARK, "local", "postgres", "stop", "--dir", str(self.pg_dir)]
        )

    def dag_run(self, dag_id: str, timeout_s: float = 900) -> dict[str, Any]:
        """Trigger a run of `dag_id` and wait for its end; it must succeed."""
        argv = [*REST, "run", dag_id, "--timeout", str(timeout_s)]
        run: dict[str, Any] = json.loads(self._last_line(argv, timeout_s + 240))
        assert run["state"] == "success", json.dumps(run, indent=2)
        return run

    def trigger(self, dag_id: str) -> str:
        return str(json.loads(self._last_line([*REST, "trigger", dag_id], 240))["run_id"])

    def tasks(self, dag_id: str, run_id: str) -> dict[str, Any]:
        return dict(json.loads(self._last_line([*REST, "tasks", dag_id, "--run", run_id], 180)))

    def task_state(self, dag_id: str, run_id: str, task_id: str) -> str | None:
        found = self.tasks(dag_id, run_id).get(task_id) or {}
        return found.get("state")

    def finished(self, dag_id: str, run_id: str, timeout_s: float = 600) -> dict[str, Any]:
        """Wait for the end of a run triggered before; it must succeed."""
        argv = [*REST, "wait", dag_id, "--run", run_id, "--timeout", str(timeout_s)]
        run: dict[str, Any] = json.loads(self._last_line(argv, timeout_s + 120))
        assert run["state"] == "success", json.dumps(run, indent=2)
        return run

    def _last_line(self, argv: list[str], timeout_s: float) -> str:
        return self.stack.on("ops", argv, timeout=timeout_s).strip().splitlines()[-1]
