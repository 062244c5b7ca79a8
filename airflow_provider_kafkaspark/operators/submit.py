"""SubmitStreamingJobOperator and RestoreStreamingJobOperator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator, Context

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook


class SubmitStreamingJobOperator(BaseOperator):
    """Submit a streaming job and return a small, durable handle (XCom); do not wait for it.

    :param job_spec: the job spec (dict or JSON); its Kafka servers and client settings come
        from ``kafka_conn_id`` (an official-provider ``kafka`` connection). Its
        ``python_path`` entries (folders or archives holding the transformation's module) may
        be relative to the DAG file's folder; the submit checks that the module is there and
        that the job's topics exist, and fails without a retry when not.
    :param spark_conn_id: an official-provider ``spark`` connection. Without one, or with a
        client deploy mode, the driver runs as a detached local process (``master`` or the
        connection's master); with ``deploy-mode: cluster`` the official SparkSubmitHook
        submits it to YARN, Kubernetes or a standalone cluster.
    :param if_running: what to do when a live driver holds the checkpoint's lease:
        ``fail``, ``skip``, or ``replace`` (graceful stop first, then submit).
    :param restore_from: a savepoint id, ``latest``, or None; with ``restore_mode``
        (``checkpoint`` | ``offsets`` | ``latest``) and ``savepoint_root``.
    :param max_restarts / restart_window_s / restart_backoff_s: the restart policy of the
        local supervisor: at most K restarts in a window, with back-off.
    :param aws_conn_id: an official-provider ``aws`` connection for a checkpoint or savepoints
        on S3 (``s3://`` or ``s3a://``); the driver gets its credentials as the standard AWS
        variables, never in the spec. Without one, the standard AWS variables and files apply.
    """

    template_fields: Sequence[str] = (
        "job_spec",
        "restore_from",
        "restore_mode",
        "savepoint_root",
        "workdir",
        "master",
    )
    ui_color = "#e8f4fd"

    def __init__(
        self,
        *,
        job_spec: dict[str, Any] | str,
        kafka_conn_id: str = "kafka_default",
        spark_conn_id: str | None = None,
        workdir: str = "/tmp/kafkaspark/jobs",
        master: str = "local[2]",
        if_running: str = "fail",
        restore_from: str | None = None,
        restore_mode: str = "checkpoint",
        savepoint_root: str | None = None,
        probe_bootstrap: bool = True,
        probe_timeout_s: float = 5.0,
        max_restarts: int = 3,
        restart_window_s: float = 600.0,
        restart_backoff_s: float = 5.0,
        aws_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        # Each key of the handle is its own XCom too: submit.output["since_batch"].
        kwargs.setdefault("multiple_outputs", True)
        super().__init__(**kwargs)
        from airflow_provider_kafkaspark.errors import InvalidArgumentError
        from airflow_provider_kafkaspark.lifecycle import IF_RUNNING

        if if_running not in IF_RUNNING:
            raise InvalidArgumentError(
                f"if_running={if_running!r} is not one of {list(IF_RUNNING)}"
            )
        self.job_spec = job_spec
        self.kafka_conn_id = kafka_conn_id
        self.spark_conn_id = spark_conn_id
        self.workdir = workdir
        self.master = master
        self.if_running = if_running
        self.restore_from = restore_from
        self.restore_mode = restore_mode
        self.savepoint_root = savepoint_root
        self.probe_bootstrap = probe_bootstrap
        self.probe_timeout_s = probe_timeout_s
        self.max_restarts = max_restarts
        self.restart_window_s = restart_window_s
        self.restart_backoff_s = restart_backoff_s
        self.aws_conn_id = aws_conn_id

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_kafkaspark.airflow_errors import airflow_errors
        from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

        hook = KafkaSparkHook(self.kafka_conn_id, self.spark_conn_id, self.aws_conn_id)
        with airflow_errors(self.task_id), hook.storage():
            return self._submit(hook)

    def _dag_folder(self) -> str | None:
        import os

        dag = getattr(self, "_dag", None)  # unset for a task built outside a DAG
        fileloc = getattr(dag, "fileloc", None)
        return os.path.dirname(fileloc) if fileloc else None

    def _submit(self, hook: KafkaSparkHook) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

        from airflow_provider_kafkaspark.core.job_code import (
            check_code_visible,
            check_topics_exist,
            resolve_python_path,
        )
        from airflow_provider_kafkaspark.core.jobspec import JobSpec
        from airflow_provider_kafkaspark.core.restart import RestartPolicy
        from airflow_provider_kafkaspark.errors import InvalidArgumentError, KafkaUnavailableError
        from airflow_provider_kafkaspark.lifecycle import (
            live_first,
            live_lease,
            restore_for_submit,
            stop_job,
            submit_local,
            with_connection,
        )

        if self.restore_from and not self.savepoint_root:
            # Checked before anything is probed or stopped: the arguments alone are wrong.
            problem = f"{self.task_id}: restore_from={self.restore_from!r} needs savepoint_root"
            raise AirflowFailException(problem) from InvalidArgumentError(problem)
        given = (
            JobSpec.from_json(self.job_spec, where="job_spec")
            if isinstance(self.job_spec, str)
            else JobSpec.from_dict(self.job_spec)
        )
        given = resolve_python_path(given, self._dag_folder())
        check_code_visible(given)
        servers, spec_config = hook.kafka_spec_config()
        spec = with_connection(given, servers, spec_config)
        client = hook.kafka_client_config()

        lease = live_lease(spec.checkpoint_location)
        if lease is not None:
            message = f"job {spec.job_name} is running: {lease.describe()}"
            if self.if_running == "fail":
                raise AirflowFailException(message + " (if_running='fail')")
            if self.if_running == "skip":
                raise AirflowSkipException(message + " (if_running='skip')")
            self.log.info("%s: stopping it first (if_running='replace')", message)
            stop_job(
                spec.checkpoint_location,
                requested_by=f"airflow:{self.task_id}",
                reason="replaced by a new submit",
                drain_timeout_s=spec.drain_timeout_s,
            )

        dead: list[str] = []
        if self.probe_bootstrap:
            from airflow_provider_kafkaspark.core.bootstrap_probe import probe_bootstrap

            report = probe_bootstrap(client, timeout_s=self.probe_timeout_s)
            dead = list(report.dead)
            if not report.healthy:
                problem = f"no bootstrap server of connection {self.kafka_conn_id!r} answers: " + (
                    "; ".join(f"{s.server}: {s.reason}" for s in report.servers)
                )
                raise AirflowFailException(problem) from KafkaUnavailableError(problem)
            if dead:
                self.log.warning(
                    "bootstrap servers that are dead or not cluster members: %s "
                    "(submitting anyway with the live ones listed first)",
                    ", ".join(dead),
                )
                spec = with_connection(spec, live_first(servers, dead), spec.kafka_config)
            check_topics_exist(spec, client)

        restored: dict[str, Any] | None = None
        if self.restore_from and self.savepoint_root:
            spec, restored = restore_for_submit(
                spec,
                savepoint_root=self.savepoint_root,
                savepoint_ref=self.restore_from,
                mode=self.restore_mode,
                kafka_config=client,
            )
            self.log.info("restored for submit: %s", restored)

        master = self.master
        if self.spark_conn_id:
            master, deploy_mode = hook.spark_connection()
            if deploy_mode == "cluster":
                return self._submit_cluster(hook, spec, dead, restored)

        policy = RestartPolicy(
            max_restarts=self.max_restarts,
            window_s=self.restart_window_s,
            backoff_s=self.restart_backoff_s,
            backoff_max_s=max(self.restart_backoff_s, 120.0),
        )
        handle = submit_local(
            spec,
            self.workdir,
            master=master,
            restart_policy=policy,
            submitted_by=f"airflow:{self.dag_id}.{self.task_id}",
            env=hook.driver_env(),
        )
        handle.update(dead_bootstrap_servers=dead, restored=restored)
        self.log.info(
            "submitted %s: pid %s (the %s; the driver's own pid is in the lease once it "
            "runs), driver log %s",
            spec.job_name,
            handle["pid"],
            handle["pid_role"],
            handle["log_file"],
        )
        return handle

    def _submit_cluster(
        self, hook: KafkaSparkHook, spec: Any, dead: list[str], restored: dict[str, Any] | None
    ) -> dict[str, Any]:
        import socket

        from airflow_provider_kafkaspark.core.control import (
            ControlFolder,
            SubmittedMarker,
            now_ms,
        )
        from airflow_provider_kafkaspark.lifecycle import latest_committed
        from airflow_provider_kafkaspark.local.jobs import write_spec_file

        since = latest_committed(spec.checkpoint_location)
        spec_file = write_spec_file(spec, self.workdir)
        submitted_at = now_ms()
        handle = hook.submit_cluster_mode(
            str(spec_file), job_name=spec.job_name, spark_conf=spec.spark_conf
        )
        ControlFolder(spec.checkpoint_location).write_submitted(
            SubmittedMarker(
                submitted_at_ms=submitted_at,
                job_name=spec.job_name,
                submitted_by=f"airflow:{self.dag_id}.{self.task_id}",
                host=socket.gethostname(),
            )
        )
        handle.update(
            checkpoint=spec.checkpoint_location,
            since_batch=since,
            dead_bootstrap_servers=dead,
            restored=restored,
        )
        self.log.info("submitted %s in cluster mode: %s", spec.job_name, handle)
        return handle


class RestoreStreamingJobOperator(SubmitStreamingJobOperator):
    """Verify a savepoint, reconcile it against Kafka, restore it and submit the job.

    Blocking reconciliation findings (records lost to retention, a recreated topic) stop
    the restore with a clear message. Defaults to the newest savepoint of the job."""

    def __init__(self, *, savepoint_root: str, restore_from: str = "latest", **kwargs: Any) -> None:
        kwargs.setdefault("if_running", "fail")
        super().__init__(savepoint_root=savepoint_root, restore_from=restore_from, **kwargs)
