"""SubmitStreamingJobOperator and RestoreStreamingJobOperator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator, Context

from airflow_provider_kafkaspark.links import job_links

if TYPE_CHECKING:
    from airflow.providers.openlineage.extractors import OperatorLineage
    from airflow.sdk.types import RuntimeTaskInstanceProtocol

    from airflow_provider_kafkaspark.backends.base import JobBackend, SubmitOptions
    from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef
    from airflow_provider_kafkaspark.core.cluster.local_driver_policy import SubmitHost
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook


class SubmitStreamingJobOperator(BaseOperator):
    """Submit a streaming job and return a small, durable handle (XCom); do not wait for it.

    :param job_spec: the job spec (dict or JSON); its Kafka servers and client settings come
        from ``kafka_conn_id`` (an official-provider ``kafka`` connection). Its
        ``python_path`` entries (folders or archives holding the transformation's module) may
        be relative to the DAG file's folder; the submit checks that the module is there and
        that the job's topics exist, and fails without a retry when not.
    :param kafka_conn_id: an official-provider ``kafka`` connection: its extra's
        ``bootstrap.servers`` and client settings replace the spec's servers and fill its
        ``kafka_config``. Default ``kafka_default``.
    :param spark_conn_id: an official-provider ``spark`` connection. Without one, or with a
        client deploy mode, the driver runs as a detached process of this worker (``master``
        or the connection's master: local mode, or a standalone cluster). With master ``yarn``
        and ``deploy-mode: cluster``, the official SparkSubmitHook submits it to YARN, whose
        ResourceManager (the extra's ``yarn_resourcemanager_webapp_address``) then observes
        and restarts it. With a ``k8s://`` master and ``deploy-mode: cluster``, the driver
        runs as the pod of a Kubernetes Job in the extra's ``namespace`` (its image in the
        spec's ``spark_conf`` as ``spark.kubernetes.container.image``). A ``k8s://`` master
        in client mode is refused. The result's ``job_ref`` names the driver for stop and
        health tasks.
    :param workdir: the folder of a local driver's files on this worker (its spec, log and
        launcher files). Templated.
    :param master: the Spark master of a driver this worker starts when there is no
        ``spark_conn_id``: ``local[N]`` (default ``local[2]``) or ``spark://host:port`` (a
        standalone cluster, client mode). Templated.
    :param allow_local_driver: run a local driver (no ``spark_conn_id``, a ``local[...]``
        ``master``) even where it is refused by default: in a Kubernetes pod (deleted when
        the task ends, and the driver with it), or under the Celery, Kubernetes or Edge
        executor (tasks run on hosts the executor picks, so the stop and health tasks may not
        reach the driver's host). Without it such a submit fails at once, saying why.
    :param kubernetes_conn_id: a cncf-kubernetes ``kubernetes`` connection for the API
        server (default: ``kubernetes_default`` if defined, else this host's kubeconfig or
        the worker pod's service account); stop and health tasks use that default.
    :param jars: comma-separated jars for ``spark-submit --jars`` on YARN (the Kafka
        connector's, and S3A's for state on S3), unless the cluster's Spark has them.
    :param if_running: what to do when a live driver holds the checkpoint's lease:
        ``fail``, ``skip``, or ``replace`` (graceful stop first, then submit).
    :param restore_from: a savepoint id, ``latest``, or None (no restore: the job starts from
        its checkpoint as it is). Templated.
    :param restore_mode: how ``restore_from`` is restored: ``checkpoint`` (default: the
        savepoint's checkpoint, state included), ``offsets`` (no state, a fresh checkpoint
        from the offsets of the savepoint's last committed batch) or ``latest`` (no state, the
        end of each partition). Templated.
    :param savepoint_root: where the job's savepoints are (a path or URL), for
        ``restore_from``. Templated.
    :param probe_bootstrap: check each bootstrap server of the connection before the submit
        and put dead entries last in the spec's list (default True).
    :param probe_timeout_s: the probe's time for each bootstrap server, in seconds.
    :param max_restarts: the restart policy: at most this many restarts within
        ``restart_window_s``; by the local supervisor (with back-off), on YARN by YARN
        (``spark.yarn.maxAppAttempts`` = restarts + 1), on Kubernetes by the Job
        (``backoffLimit``).
    :param restart_window_s: the restart policy's window, in seconds: only failures within it
        count (on YARN ``spark.yarn.am.attemptFailuresValidityInterval``; on Kubernetes no
        window applies).
    :param restart_backoff_s: the local supervisor's first back-off before a restart, in
        seconds, doubling up to 120 s (YARN has no back-off; the Kubernetes Job controller has
        its own).
    :param aws_conn_id: an official-provider ``aws`` connection for a checkpoint or savepoints
        on S3 (``s3://`` or ``s3a://``); the driver gets its credentials as the standard AWS
        variables, never in the spec. Without one, the standard AWS variables and files apply.
    :param standby: start a standby driver instead (``lifecycle/handover``): it warms up while
        the job's running driver goes on, and starts its query only when a later restore or
        submit hands the checkpoint over (``handover_from``). The task ends once the standby
        is warm (within ``standby_ready_timeout_s``); a standby never handed over exits after
        ``standby_timeout_s``. Two drivers of the job then run at once: size memory for it.
    :param standby_timeout_s: how long a standby driver waits to be handed the checkpoint
        before it exits, in seconds (its spec's ``standby_timeout_s``).
    :param standby_ready_timeout_s: how long a ``standby=True`` task waits for its standby to
        be warm, in seconds.
    :param handover_from: the handle a ``standby=True`` task returned: this submit hands the
        checkpoint over to that standby, when it still runs the same spec, instead of starting
        a driver (else it starts one and stops the standby).

    Links from the task instance (``links.py``): the driver's Spark UI, its YARN application
    page, the job's page. Metrics (``operator_metrics.py``): ``submits``, ``restarts``.
    OpenLineage (``lineage.py``): the source topics in, the sink's topic or path out.
    """

    template_fields: Sequence[str] = (
        "job_spec",
        "restore_from",
        "restore_mode",
        "savepoint_root",
        "workdir",
        "master",
        "jars",
        "kubernetes_conn_id",
        "handover_from",
    )
    ui_color = "#e8f4fd"
    operator_extra_links = tuple(job_links())

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
        jars: str | None = None,
        kubernetes_conn_id: str | None = None,
        standby: bool = False,
        standby_timeout_s: float = 900.0,
        standby_ready_timeout_s: float = 600.0,
        handover_from: dict[str, Any] | None = None,
        allow_local_driver: bool = False,
        **kwargs: Any,
    ) -> None:
        # Each key of the handle is its own XCom too: submit.output["since_batch"].
        kwargs.setdefault("multiple_outputs", True)
        super().__init__(**kwargs)
        from airflow_provider_kafkaspark.errors import InvalidArgumentError
        from airflow_provider_kafkaspark.lifecycle.inputs import check_if_running

        check_if_running(if_running)
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
        self.jars = jars
        self.kubernetes_conn_id = kubernetes_conn_id
        if standby and (restore_from or handover_from):
            raise InvalidArgumentError(
                "standby=True starts a standby for a later restore: give restore_from and "
                "handover_from to that restore's task, not to this one"
            )
        self.standby = standby
        self.standby_timeout_s = standby_timeout_s
        self.standby_ready_timeout_s = standby_ready_timeout_s
        self.handover_from = handover_from
        self.allow_local_driver = allow_local_driver
        # The spec a run submitted, on its connection's servers: lineage after the run.
        self._ran_spec: JobSpec | None = None

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_kafkaspark.airflow_errors import airflow_errors
        from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
        from airflow_provider_kafkaspark.operator_metrics import count, submit_counts

        hook = KafkaSparkHook(self.kafka_conn_id, self.spark_conn_id, self.aws_conn_id)
        self._link_job_page(context)
        with airflow_errors(self.task_id, self.kafka_conn_id), hook.storage():
            handle = self._submit(hook, str(context.get("run_id") or ""))
            if self._ran_spec is not None:
                self._link_driver(context, self._ran_spec, handle.get("job_ref"))
                if not self.standby:
                    count(self._ran_spec.job_name, submit_counts(handle))
        return {**handle, **self.observed_with()}

    def observed_with(self) -> dict[str, Any]:
        """What the jobs view (plugins/jobs_view) reads the job with: connection ids, never
        what they hold, and where its savepoints go."""
        return {
            "connections": {"kafka_conn_id": self.kafka_conn_id, "aws_conn_id": self.aws_conn_id},
            "savepoint_root": self.savepoint_root or None,
        }

    # -- links, lineage --------------------------------------------------------------------

    def _link_job_page(self, context: Context) -> None:
        """The job's page, linked before anything can fail: the job is named by the spec."""
        from airflow_provider_kafkaspark.core.cluster.web_pages import DriverPages
        from airflow_provider_kafkaspark.errors import InvalidInputError
        from airflow_provider_kafkaspark.lifecycle.inputs import job_spec_of
        from airflow_provider_kafkaspark.links import api_base_url, link_targets, persist_links

        try:
            given = job_spec_of(self.job_spec)
        except InvalidInputError:
            return  # the run fails on it, saying why
        targets = link_targets(
            given.job_name, DriverPages(), api_base_url(), given.checkpoint_location
        )
        persist_links(context, self, targets)

    def _link_driver(self, context: Context, spec: JobSpec, job_ref: Any, **kw: Any) -> None:
        """All three links, once the driver is known (`job_ref`: a handle's, or None)."""
        from airflow_provider_kafkaspark.core.cluster.job_ref import job_ref_from_dict
        from airflow_provider_kafkaspark.errors import InvalidArgumentError
        from airflow_provider_kafkaspark.lifecycle.web_pages import observed_pages
        from airflow_provider_kafkaspark.links import api_base_url, link_targets, persist_links

        ref: JobRef | None = None
        try:
            ref = job_ref_from_dict(job_ref, "handle.job_ref") if job_ref else None
        except InvalidArgumentError as exc:
            self.log.warning("no driver links: %s", exc)
        pages = observed_pages(ref, spec.spark_conf, **kw)
        targets = link_targets(spec.job_name, pages, api_base_url(), spec.checkpoint_location)
        persist_links(context, self, targets)

    def _lineage_spec(self) -> tuple[JobSpec, KafkaSparkHook]:
        from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
        from airflow_provider_kafkaspark.lifecycle.inputs import job_spec_of
        from airflow_provider_kafkaspark.lineage import connection_spec

        hook = KafkaSparkHook(self.kafka_conn_id)
        return self._ran_spec or connection_spec(job_spec_of(self.job_spec), hook), hook

    def get_openlineage_facets_on_start(self) -> OperatorLineage[Any, Any]:
        from airflow_provider_kafkaspark.core.spec.lineage import job_datasets
        from airflow_provider_kafkaspark.lineage import operator_lineage

        spec, _ = self._lineage_spec()
        return operator_lineage(job_datasets(spec))

    def get_openlineage_facets_on_complete(
        self, task_instance: RuntimeTaskInstanceProtocol
    ) -> OperatorLineage[Any, Any]:
        """As on start; a pattern source's topics listed, once the run got that far."""
        from airflow_provider_kafkaspark.core.spec.lineage import job_datasets
        from airflow_provider_kafkaspark.lineage import listed_topics, operator_lineage

        spec, hook = self._lineage_spec()
        listed = listed_topics(spec, hook) if self._ran_spec is not None else None
        return operator_lineage(job_datasets(spec, listed_topics=listed))

    # -- the submit ------------------------------------------------------------------------

    def _dag_folder(self) -> str | None:
        import os

        dag = getattr(self, "_dag", None)  # unset for a task built outside a DAG
        fileloc = getattr(dag, "fileloc", None)
        return os.path.dirname(fileloc) if fileloc else None

    def _prepare(
        self, hook: KafkaSparkHook, run_id: str = ""
    ) -> tuple[JobSpec, JobSpec, JobBackend, SubmitOptions]:
        """The spec as given (python_path resolved against the DAG folder, code checked), the
        spec with the connection's servers and settings, the backend and the submit options:
        what a submit and a deploy share."""
        from airflow_provider_kafkaspark.backends.base import SubmitOptions
        from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
        from airflow_provider_kafkaspark.core.spec.job_code import (
            check_code_visible,
            resolve_pod_templates,
            resolve_python_path,
        )
        from airflow_provider_kafkaspark.lifecycle.inputs import job_spec_of, with_connection
        from airflow_provider_kafkaspark.lineage import on_servers

        given = job_spec_of(self.job_spec)
        given = resolve_python_path(given, self._dag_folder())
        given = resolve_pod_templates(given, self._dag_folder())
        check_code_visible(given)
        servers, spec_config = hook.kafka_spec_config()
        self._ran_spec = on_servers(given, servers)
        backend = self._backend(hook)
        policy = RestartPolicy(
            max_restarts=self.max_restarts,
            window_s=self.restart_window_s,
            backoff_s=self.restart_backoff_s,
            backoff_max_s=max(self.restart_backoff_s, 120.0),
        )
        options = SubmitOptions(
            workdir=self.workdir,
            # The task instance: its retries (the same run) take up a driver it started; a
            # later run of the same task finds that driver running.
            submitted_by=f"airflow:{self.dag_id}.{self.task_id}:{run_id}",
            restart_policy=policy,
            env=hook.driver_env(),
        )
        return (
            given,
            with_connection(
                given, servers, spec_config, f"Kafka connection {self.kafka_conn_id!r}"
            ),
            backend,
            options,
        )

    def _submit(self, hook: KafkaSparkHook, run_id: str = "") -> dict[str, Any]:
        from airflow_provider_kafkaspark.errors import InvalidArgumentError
        from airflow_provider_kafkaspark.lifecycle.submit import (
            RestoreRequest,
            SubmitRequest,
            submit_streaming_job,
        )

        if self.restore_from and not self.savepoint_root:
            # Checked before anything is probed or stopped: the arguments alone are wrong.
            raise InvalidArgumentError(f"restore_from={self.restore_from!r} needs savepoint_root")
        given, spec, backend, options = self._prepare(hook, run_id)
        if self.standby:
            return self._start_standby(backend, spec, options)
        request = SubmitRequest(
            spec=spec,
            kafka_client=hook.kafka_client_config(),
            options=options,
            if_running=self.if_running,
            probe_bootstrap=self.probe_bootstrap,
            probe_timeout_s=self.probe_timeout_s,
            restore=RestoreRequest(self.savepoint_root, self.restore_from, self.restore_mode)
            if self.restore_from and self.savepoint_root
            else None,
            servers_from=f"connection {self.kafka_conn_id!r}",
            standby=self.handover_from or None,
        )
        handle = submit_streaming_job(backend, request)
        verb = "submitted"
        if handle.get("standby_token"):
            verb = "handed over to standby"
        elif handle.get("adopted"):
            verb = "took up the driver an earlier try started for"
        self.log.info("%s %s: %s", verb, given.job_name, _describe(handle))
        return handle

    def _start_standby(
        self, backend: JobBackend, spec: JobSpec, options: SubmitOptions
    ) -> dict[str, Any]:
        from airflow_provider_kafkaspark.lifecycle.handover import (
            submit_standby,
            wait_standby_ready,
        )

        handle = submit_standby(backend, spec, options, timeout_s=self.standby_timeout_s)
        self.log.info("standby for %s started: %s", spec.job_name, _describe(handle))
        waited = wait_standby_ready(handle, self.standby_ready_timeout_s)
        self.log.info("standby %s warm after %.1fs", handle["standby_token"], waited)
        return handle

    def _backend(self, hook: KafkaSparkHook) -> JobBackend:
        """The deployment backend: the `spark` connection's master and deploy mode, else
        `master` on this host."""
        from airflow_provider_kafkaspark.backends import BackendKind, backend_kind, make_backend
        from airflow_provider_kafkaspark.core.cluster.local_driver_policy import (
            local_driver_refusal,
        )
        from airflow_provider_kafkaspark.errors import InvalidArgumentError

        master, deploy_mode = self.master, None
        if self.spark_conn_id:
            master, deploy_mode = hook.spark_connection()
        kind = backend_kind(master, deploy_mode)
        if kind is BackendKind.LOCAL and not self.spark_conn_id:
            refusal = local_driver_refusal(submit_host(), master, self.allow_local_driver)
            if refusal:
                raise InvalidArgumentError(f"task {self.task_id!r}: {refusal}")
        return make_backend(
            kind,
            master,
            spark_conn_id=self.spark_conn_id,
            jars=self.jars,
            kubernetes_conn_id=self.kubernetes_conn_id,
        )


def submit_host() -> SubmitHost:
    """Where this task runs, as Airflow's configuration and Kubernetes' variables say."""
    import os

    from airflow.configuration import conf

    from airflow_provider_kafkaspark.core.cluster.local_driver_policy import SubmitHost

    configured = str(conf.get("core", "executor", fallback="") or "")
    # Airflow 3 takes a list, each entry a class name or `alias:module.Class`.
    executors = tuple(e.split(":")[-1].strip() for e in configured.split(",") if e.strip())
    return SubmitHost(executors, bool(os.environ.get("KUBERNETES_SERVICE_HOST")))


def _describe(handle: dict[str, Any]) -> str:
    from airflow_provider_kafkaspark.core.cluster.job_ref import LocalJobRef, job_ref_from_dict
    from airflow_provider_kafkaspark.lifecycle.observe import describe_ref

    ref = job_ref_from_dict(handle["job_ref"], "submit handle.job_ref")
    if isinstance(ref, LocalJobRef):
        return (
            f"pid {ref.pid} (the {handle.get('pid_role')}; the driver's own pid is in the "
            f"lease once it runs), driver log {ref.log_file}"
        )
    return describe_ref(ref)


class RestoreStreamingJobOperator(SubmitStreamingJobOperator):
    """Verify a savepoint, reconcile it against Kafka, restore it and submit the job.

    Blocking reconciliation findings (records lost to retention, a recreated topic) stop
    the restore with a clear message. Defaults to the newest savepoint of the job. Every other
    parameter is ``SubmitStreamingJobOperator``'s (``job_spec``, ``restore_mode``, the
    connections, ...); ``if_running`` defaults to ``fail``.

    :param savepoint_root: where the job's savepoints are (a path or URL). Templated.
    :param restore_from: the savepoint to restore: its id, or ``latest`` (default). Templated.
    """

    def __init__(self, *, savepoint_root: str, restore_from: str = "latest", **kwargs: Any) -> None:
        kwargs.setdefault("if_running", "fail")
        super().__init__(savepoint_root=savepoint_root, restore_from=restore_from, **kwargs)
