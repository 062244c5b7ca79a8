"""DeployStreamingJobOperator: make the running job match a desired spec."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import Context

from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
    from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
    from airflow_provider_kafkaspark.lifecycle.deploy import DeployPolicy


class DeployStreamingJobOperator(SubmitStreamingJobOperator):
    """Deploy a streaming job declaratively: submit it when nothing runs, do nothing when the
    desired spec runs already, upgrade it in ``upgrade_mode`` when another spec runs; then the
    health gate, and an automatic rollback to the last stable spec when the upgrade is not
    healthy (the task then fails saying so). The deployment's record (desired and stable spec,
    the savepoint each stands on, status, history) is ``_kafkaspark/deployment.json`` in the
    job's checkpoint location; ``kafkaspark deploy status`` shows it.

    The spec's identity is a hash of the spec (without the connection's settings), the code
    its ``python_path`` holds (by content) and its Spark version: editing the module's file
    is a new spec. A rollback runs the stable spec's code as it was deployed (kept in the
    control folder).

    :param kwargs: ``job_spec``, ``kafka_conn_id``, ``spark_conn_id``,
        ``kubernetes_conn_id``, ``master``, ``workdir``, ``jars``, ``aws_conn_id``,
        ``max_restarts``, ``restart_window_s``, ``restart_backoff_s``, ``probe_bootstrap`` and
        ``allow_local_driver`` as for ``SubmitStreamingJobOperator``, and Airflow's
        ``BaseOperator`` arguments.
    :param upgrade_mode: ``savepoint`` (stop at a batch boundary with a savepoint, restore it),
        ``last-state`` (stop at a batch boundary, continue the checkpoint) or ``stateless``
        (stop with a savepoint, start on fresh state from its Kafka offsets).
    :param savepoint_root: where upgrade savepoints go (needed by ``savepoint`` and
        ``stateless``).
    :param compat_check: run the new spec once against a copy of the running job's state
        before the old job is touched (default: on for ``savepoint`` and ``last-state``).
    :param proceed_without_check: upgrade even when the check cannot run (no committed batch).
    :param min_new_batches: the health gate: batches the deployed job must commit.
    :param health_window_s: the health gate's window, in seconds (as the health sensor's
        ``window_s``).
    :param health_poll_s: seconds between the health gate's polls.
    :param health_timeout_s: how long the health gate waits for a healthy job before it
        judges the deploy unhealthy, in seconds.
    :param rollback: roll back automatically when the upgrade is unhealthy (default True).
    :param max_savepoints: savepoint retention after each upgrade: at most this many of the
        job's savepoints are kept (None: no count limit); the stable spec's is always kept.
    :param max_savepoint_age_s: savepoint retention after each upgrade: savepoints older than
        this are disposed (None: no age limit); the stable spec's is always kept.
    :param restore_policy: with nothing running, start from the ``checkpoint`` as it is, or
        from the stable spec's ``savepoint`` (else the job's latest).
    :param retry_rolled_back: deploy again a spec the deployment rolled back from.
    :param restart_nonce: part of the spec's identity (as the Flink Kubernetes Operator's
        ``restartNonce``): a new value restarts an unchanged spec, e.g. ``"{{ ds }}"`` in a
        scheduled restart window.
    :param warm_handover: in a ``savepoint`` upgrade, start the new driver as a standby while
        the old one runs (on any backend: the standby is submitted through the job's own, on
        YARN as a second application), so the downtime is a stop and a query start; two
        drivers of the job run for a while.

    Links, lineage: as for ``SubmitStreamingJobOperator`` (the links name the driver that runs
    after the deploy). Metrics: ``submits``; ``restarts`` for an upgrade.
    """

    template_fields: Sequence[str] = (
        "job_spec",
        "savepoint_root",
        "workdir",
        "master",
        "jars",
        "kubernetes_conn_id",
        "upgrade_mode",
        "restart_nonce",
    )
    ui_color = "#e3f1e6"

    def __init__(
        self,
        *,
        upgrade_mode: str = "savepoint",
        savepoint_root: str | None = None,
        compat_check: bool | None = None,
        proceed_without_check: bool = False,
        min_new_batches: int = 2,
        health_window_s: float = 30.0,
        health_poll_s: float = 2.0,
        health_timeout_s: float = 300.0,
        rollback: bool = True,
        max_savepoints: int | None = 10,
        max_savepoint_age_s: float | None = None,
        restore_policy: str = "checkpoint",
        retry_rolled_back: bool = False,
        restart_nonce: str | None = None,
        warm_handover: bool = False,
        **kwargs: Any,
    ) -> None:
        from airflow_provider_kafkaspark.core.health.settings import HealthSettings

        super().__init__(savepoint_root=savepoint_root, **kwargs)
        self.upgrade_mode = upgrade_mode
        self.compat_check = compat_check
        self.proceed_without_check = proceed_without_check
        self.health = HealthSettings.checked(
            self.task_id,
            min_new_batches=min_new_batches,
            window_s=health_window_s,
            poll_interval_s=health_poll_s,
        )
        self.health_timeout_s = health_timeout_s
        self.rollback = rollback
        self.max_savepoints = max_savepoints
        self.max_savepoint_age_s = max_savepoint_age_s
        self.restore_policy = restore_policy
        self.retry_rolled_back = retry_rolled_back
        self.restart_nonce = restart_nonce
        self.warm_handover = warm_handover
        if not any("{{" in str(v) for v in (upgrade_mode, savepoint_root)):
            self._policy().checked()  # bad arguments fail the DAG file, not the run

    def _policy(self) -> DeployPolicy:
        from airflow_provider_kafkaspark.core.deploy.deployment import UpgradeMode
        from airflow_provider_kafkaspark.lifecycle.deploy import DeployPolicy

        return DeployPolicy(
            upgrade_mode=UpgradeMode.parse(self.upgrade_mode),
            savepoint_root=self.savepoint_root,
            compat_check=self.compat_check,
            proceed_without_check=self.proceed_without_check,
            health=self.health,
            health_timeout_s=self.health_timeout_s,
            rollback=self.rollback,
            max_savepoints=self.max_savepoints,
            max_savepoint_age_s=self.max_savepoint_age_s,
            restore_policy=self.restore_policy,
            retry_rolled_back=self.retry_rolled_back,
            warm_handover=self.warm_handover,
        )

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_kafkaspark.airflow_errors import airflow_errors
        from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook

        hook = KafkaSparkHook(self.kafka_conn_id, self.spark_conn_id, self.aws_conn_id)
        self._link_job_page(context)
        with airflow_errors(self.task_id, self.kafka_conn_id), hook.storage():
            result = self._deploy(hook, context)
            if self._ran_spec is not None:
                self._after_deploy(context, self._ran_spec, result)
        return {**result, **self.observed_with()}

    def _after_deploy(self, context: Context, spec: JobSpec, result: dict[str, Any]) -> None:
        """Links to the driver that runs now (the one a deploy that changed nothing found
        running, from the checkpoint's last submit), and the deploy's counters."""
        from airflow_provider_kafkaspark.core.cluster.job_ref import job_ref_to_dict
        from airflow_provider_kafkaspark.errors import KafkaSparkError
        from airflow_provider_kafkaspark.lifecycle.observe import submitted_ref
        from airflow_provider_kafkaspark.operator_metrics import count, deploy_counts

        job_ref = (result.get("handle") or {}).get("job_ref")
        if job_ref is None:
            try:
                found = submitted_ref(spec.checkpoint_location)
            except (KafkaSparkError, OSError) as exc:
                self.log.warning("no driver links: the checkpoint's last submit: %s", exc)
                found = None
            job_ref = None if found is None else job_ref_to_dict(found)
        self._link_driver(context, spec, job_ref)
        count(spec.job_name, deploy_counts(result))

    def _deploy(self, hook: KafkaSparkHook, context: Context) -> dict[str, Any]:
        from airflow_provider_kafkaspark.lifecycle.deploy import DeployRequest, deploy_job

        run_id = str(context.get("run_id") or "")
        given, spec, backend, options = self._prepare(hook, run_id)
        request = DeployRequest(
            spec=spec,
            given=given,
            kafka_client=hook.kafka_client_config(),
            options=options,
            policy=self._policy().checked(),
            # A retry of this task instance takes up its own upgrade again.
            by=f"airflow:{self.dag_id}.{self.task_id}:{run_id}",
            restart_nonce=self.restart_nonce or None,
            probe_bootstrap=self.probe_bootstrap,
            probe_timeout_s=self.probe_timeout_s,
            servers_from=f"connection {self.kafka_conn_id!r}",
        )
        result = deploy_job(backend, request)
        self.log.info(
            "deploy of %s: %s (%s); status %s; timings %s",
            given.job_name,
            result["action"],
            result["reason"],
            result["status"],
            result["timings"],
        )
        return {**result, "checkpoint": given.checkpoint_location}
