"""Drivers in a YARN application master (cluster deploy mode), submitted through the official
Spark provider's SparkSubmitHook with a `spark` connection (`master` yarn, extra
`deploy-mode: cluster`, `yarn_resourcemanager_webapp_address`: with ResourceManager HA,
each RM's, comma separated). The reference holds the application id; status and kill go to
the (active) ResourceManager's REST API, so any host that reaches it can observe or kill the
job, and no pid is involved. Driver restarts are YARN's
own (`spark.yarn.maxAppAttempts` within `spark.yarn.am.attemptFailuresValidityInterval`).

What travels with each submit: the job spec (`--files`, its secrets left out), the provider's
code as a zip (`--py-files`), the job's `python_path` entries (folders zipped, archives copied,
each under the name the spec then gives the driver; `--py-files` too), and the connector jars
given in `jars`: a local jar once per version when the staging folder
(`spark.yarn.stagingDir`) is on a cluster filesystem (`backends/staged_jars.py`), else with
each submit; a `local:` jar (installed on every node) never. The secrets (the spec's, the
storage credentials) go as secret keys of the Hadoop credentials spark-submit hands the
ResourceManager with the launch context, as delegation tokens do
(`core/cluster/hadoop_credentials.py`): not in the staging folder, the conf archive, a command
line or the container's launch script. The nodes need a Python with the
driver's dependencies (pyspark, confluent-kafka, s3fs) named by `spark.pyspark.python`, usually
in the cluster's spark-defaults.conf.

Secured clusters (the RM's web API behind SPNEGO/Kerberos): the `spark` connection's extra
`principal` and `keytab` (the official provider's fields: the keytab base64-encoded, which
its hook also hands spark-submit as `--principal`/`--keytab`) are the login of this backend's
REST calls; without them, or with no connection (a stop or health task from a reference
alone), the host's own ticket cache or client keytab (`kinit -kt`, `airflow kerberos`,
`KRB5_CLIENT_KTNAME`). The connection is read for it only when an RM asks for Negotiate, and
nothing of the login goes into the reference.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.backends.base import (
    JobStatus,
    SubmitOptions,
    Submitted,
    shippable,
)
from airflow_provider_kafkaspark.core.cluster import spnego, yarn_rest
from airflow_provider_kafkaspark.core.cluster.hadoop_credentials import encode_secret_keys
from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef, YarnJobRef, require_backend
from airflow_provider_kafkaspark.core.cluster.restart import RestartPolicy
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.storage.private_file import private_copy, write_private
from airflow_provider_kafkaspark.errors import ClusterUnavailableError, InvalidInputError
from airflow_provider_kafkaspark.spark.secrets import ALIAS_PREFIX

RM_ADDRESS_EXTRA = "yarn_resourcemanager_webapp_address"
# The official Spark provider's Kerberos fields of a `spark` connection's extra.
PRINCIPAL_EXTRA = "principal"
KEYTAB_EXTRA = "keytab"


def kerberos_login_of(conn_id: str, extra: dict[str, Any]) -> spnego.KerberosLogin:
    """The SPNEGO login a `spark` connection's extra gives: its principal and keytab; a
    principal alone asks for that principal's ticket in the host's cache; neither, the host's
    default credentials. A keytab without a principal, or one that is not base64 of a keytab,
    is bad input naming the connection (never the value)."""
    where = f"spark connection {conn_id!r}"
    principal = str(extra.get(PRINCIPAL_EXTRA) or "").strip() or None
    encoded = str(extra.get(KEYTAB_EXTRA) or "").strip()
    if not encoded:
        source = where if principal else f"{where} (no principal): {spnego.DEFAULT_SOURCE}"
        return spnego.KerberosLogin(principal, None, source)
    if not principal:
        raise InvalidInputError(
            f"{where}: the extra has a `keytab` but no `principal`: the {spnego.MECHANISM} "
            f"login needs the principal whose keys the keytab holds"
        )
    keytab = str(private_copy(spnego.decode_keytab(encoded, where), "client.keytab"))
    return spnego.KerberosLogin(principal, keytab, where)


def restart_conf(policy: RestartPolicy | None) -> dict[str, str]:
    """The restart policy in YARN's terms: attempts = restarts + 1, failures older than the
    window forgotten. (YARN has no back-off between attempts; the ResourceManager's
    `yarn.resourcemanager.am.max-attempts` caps the attempts.)"""
    if policy is None:
        return {"spark.yarn.maxAppAttempts": "1"}
    return {
        "spark.yarn.maxAppAttempts": str(policy.max_restarts + 1),
        "spark.yarn.am.attemptFailuresValidityInterval": f"{max(1, round(policy.window_s))}s",
    }


SUBMIT_TAG_PREFIX = "kafkaspark-submit-"


def submit_tag(submit_id: str) -> str:
    """The application tag that carries a submit's id, lowercased as YARN keeps tags."""
    return (SUBMIT_TAG_PREFIX + submit_id).lower()


def with_submit_tag(conf: dict[str, str], submit_id: str | None) -> dict[str, str]:
    """`conf` with the submit's tag added to the application's tags (`spark.yarn.tags`, next
    to any the job sets)."""
    if not submit_id:
        return conf
    tags = [t for t in conf.get("spark.yarn.tags", "").split(",") if t.strip()]
    return {**conf, "spark.yarn.tags": ",".join([*tags, submit_tag(submit_id)])}


def submitted_application(apps: list[dict[str, Any]], job_name: str) -> str | None:
    """The id of the live application of `job_name` among those a submit's tag lists (the
    newest, should the tag be on several), or None."""
    live = [
        a
        for a in apps
        if a.get("name") == job_name and str(a.get("state", "")) in yarn_rest.ACTIVE_STATES
    ]
    if not live:
        return None
    return str(max(live, key=lambda a: int(a.get("startedTime") or 0))["id"])


def credentials_file(folder: Path, env: dict[str, str]) -> Path:
    """The variables as a Hadoop token storage file only this user reads, for spark-submit's
    login to take into the credentials it hands the ResourceManager."""
    keys = {ALIAS_PREFIX + name: value.encode() for name, value in env.items()}
    return write_private(folder / "credentials.hdts", encode_secret_keys(keys))


PYSPARK_ARCHIVES = "PYSPARK_ARCHIVES_PATH"


def submit_environment(
    token_file: Path, environ: dict[str, str] | None = None, pyspark_archives: str | None = None
) -> dict[str, str]:
    """spark-submit's environment: Hadoop's login also reads the token files named by the
    `hadoop.token.files` property, next to any `HADOOP_TOKEN_FILE_LOCATION` of the caller's
    (a kerberized client's delegation tokens), which stays as it is. `pyspark_archives`
    (staged copies) name pyspark's Python archives where the caller's environment does not."""
    source = dict(os.environ if environ is None else environ)
    options = source.get("SPARK_SUBMIT_OPTS", "")
    source["SPARK_SUBMIT_OPTS"] = f"{options} -Dhadoop.token.files={token_file}".strip()
    if pyspark_archives and not source.get(PYSPARK_ARCHIVES):
        source[PYSPARK_ARCHIVES] = pyspark_archives
    return source


def spark_defaults_text(environ: dict[str, str] | None = None) -> str:
    """The client's spark-defaults.conf (SPARK_CONF_DIR, else SPARK_HOME/conf), or ''."""
    source = os.environ if environ is None else environ
    folders = [source.get("SPARK_CONF_DIR")]
    if source.get("SPARK_HOME"):
        folders.append(os.path.join(source["SPARK_HOME"], "conf"))
    for folder in folders:
        if folder and os.path.isfile(os.path.join(folder, "spark-defaults.conf")):
            return Path(folder, "spark-defaults.conf").read_text()
    return ""


class YarnBackend:
    """Submit needs the `spark` connection; status and kill need only the reference, which
    names its ResourceManager (a stop or health task on another host has no connection)."""

    name = "yarn"

    def __init__(
        self,
        spark_conn_id: str | None = None,
        *,
        jars: str | None = None,
        conf: dict[str, str] | None = None,
    ) -> None:
        self.spark_conn_id = spark_conn_id
        self.jars = jars
        self.conf = dict(conf or {})
        # The REST calls' transport: SPNEGO as the connection (or the host) says, when an
        # RM asks for it.
        self.transport = yarn_rest.kerberos_transport(self.kerberos_login)

    def kerberos_login(self) -> spnego.KerberosLogin:
        """Who the REST calls log in as when a ResourceManager asks for SPNEGO: the `spark`
        connection's principal and keytab, else the host's default credentials."""
        if not self.spark_conn_id:
            return spnego.KerberosLogin()
        from airflow.sdk import BaseHook

        extra = BaseHook.get_connection(self.spark_conn_id).extra_dejson
        return kerberos_login_of(self.spark_conn_id, extra)

    def resource_manager(self) -> str:
        """The ResourceManager's web address from the `spark` connection's extra (the key the
        official hook reads for its own REST tracking); with ResourceManager HA, each RM's,
        comma separated in the order of `yarn.resourcemanager.ha.rm-ids`. The reference keeps
        them as given, so a status or kill follows whichever is active then."""
        from airflow.sdk import BaseHook

        if not self.spark_conn_id:
            raise InvalidInputError("a submit to YARN needs a `spark` connection (spark_conn_id)")
        extra = BaseHook.get_connection(self.spark_conn_id).extra_dejson
        given = str(extra.get(RM_ADDRESS_EXTRA) or "").strip()
        try:
            addresses = yarn_rest.resource_manager_addresses(given)
        except InvalidInputError as exc:
            raise InvalidInputError(
                f"spark connection {self.spark_conn_id!r}: the yarn backend needs the "
                f"ResourceManager's web address in its extra as {RM_ADDRESS_EXTRA!r} "
                f"(http://host:8088; with HA each RM's, comma separated): {exc}"
            ) from None
        return ",".join(addresses)

    def submit(self, spec: JobSpec, options: SubmitOptions) -> Submitted:
        from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

        from airflow_provider_kafkaspark.backends.package_archive import (
            package_zip,
            ship_python_path,
        )
        from airflow_provider_kafkaspark.backends.staged_jars import pyspark_archives, stage_jars
        from airflow_provider_kafkaspark.core.cluster.jar_staging import staging_dir
        from airflow_provider_kafkaspark.core.spec.job_code import is_local
        from airflow_provider_kafkaspark.spark import runner

        resource_manager = self.resource_manager()
        with tempfile.TemporaryDirectory(prefix="kafkaspark-submit-") as tmp:
            folder = Path(tmp)
            # YARN localizes each --py-files file into the containers' working folder under
            # its own name, which is what the shipped spec names.
            spec, shipped = ship_python_path(spec, folder)
            spec, env = shippable(spec, options.env)
            spec_file = write_private(folder / f"{spec.job_name}.spec.json", spec.to_json())
            archives = [str(package_zip(folder)), *map(str, shipped)]
            archives += [p for p in spec.python_path if not is_local(p)]
            conf = {
                **restart_conf(options.restart_policy),
                "spark.yarn.submit.waitAppCompletion": "false",
                **self.conf,
                **spec.spark_conf,
            }
            conf = with_submit_tag(conf, options.submit_id)
            defaults = spark_defaults_text()
            staging = staging_dir(conf, defaults)
            staged = stage_jars(self.jars, staging)
            # spark-submit ships pyspark's archives itself unless the environment names them.
            python_libs = stage_jars(
                None if os.environ.get(PYSPARK_ARCHIVES) else pyspark_archives(), staging
            )
            # A properties file replaces the client's spark-defaults.conf: that goes in it.
            properties = write_private(folder / "spark-submit.conf", defaults)
            token_file = credentials_file(folder, env)
            hook = SparkSubmitHook(
                conn_id=str(self.spark_conn_id),
                conf=conf,
                files=str(spec_file),
                py_files=",".join(archives),
                jars=staged.jars,
                name=spec.job_name,
                application_args=["--spec", spec_file.name],
                deploy_mode="cluster",
                properties_file=str(properties),
            )
            archives_path = python_libs.jars if python_libs.staged else None
            submit_env = submit_environment(token_file, pyspark_archives=archives_path)
            hook.submit(str(Path(runner.__file__).resolve()), env=submit_env)
            # The hook reads the id from spark-submit's output and keeps it privately.
            app_id = getattr(hook, "_yarn_application_id", None)
        if not app_id:
            raise ClusterUnavailableError(
                f"spark-submit of job {spec.job_name} to YARN ({resource_manager}) printed no "
                f"application id"
            )
        ref = YarnJobRef(
            job_name=spec.job_name,
            checkpoint=spec.checkpoint_location,
            application_id=str(app_id),
            resource_manager=resource_manager,
        )
        details = {
            "application_id": ref.application_id,
            "resource_manager": resource_manager,
            "jars_uploaded_bytes": staged.uploaded_bytes + python_libs.uploaded_bytes,
        }
        return Submitted(ref, details)

    def find_submitted(self, spec: JobSpec, submit_id: str) -> JobRef | None:
        """The live application a submit tagged with `submit_id` started (`SubmitLookup`)."""
        resource_manager = self.resource_manager()
        tag = submit_tag(submit_id)
        apps = yarn_rest.tagged_applications(resource_manager, tag, self.transport)
        app_id = submitted_application(apps, spec.job_name)
        if app_id is None:
            return None
        return YarnJobRef(spec.job_name, spec.checkpoint_location, app_id, resource_manager)

    def _yarn(self, ref: JobRef, action: str) -> YarnJobRef:
        require_backend(ref, self.name, action)
        assert isinstance(ref, YarnJobRef)
        return ref

    def status(self, ref: JobRef) -> JobStatus:
        yarn = self._yarn(ref, "observe")
        app = yarn_rest.application(yarn, self.transport)
        state = str(app.get("state", ""))
        detail: dict[str, Any] = {
            "application_id": yarn.application_id,
            "final_status": app.get("finalStatus"),
            "attempts": len(yarn_rest.attempts(yarn, self.transport)),
            "tracking_url": app.get("trackingUrl"),
            "diagnostics": str(app.get("diagnostics") or "")[:500],
        }
        return JobStatus(yarn.job_name, self.name, state in yarn_rest.ACTIVE_STATES, state, detail)

    def alive(self, ref: JobRef) -> bool | None:
        """One request: the application's state (status also lists its attempts)."""
        app = yarn_rest.application(self._yarn(ref, "observe"), self.transport)
        return str(app.get("state", "")) in yarn_rest.ACTIVE_STATES

    def force_kill(self, ref: JobRef) -> None:
        yarn_rest.kill(self._yarn(ref, "kill"), transport=self.transport)
