"""The production examples (examples/production/) as a team copies them: their DAG files parse
in Airflow with their own connections, their job specs pass the checks a submit makes, the
job's transformation is what the driver calls, the RBAC copies are docs/kubernetes/'s, and
the Dockerfile stays in step with the driver image the Kubernetes tier builds
(devstack/kafkaspark_devstack/k8s/image.py): the same packages, paths and entrypoint.

Facts are read from the code that decides them (pyproject.toml's `driver` extra,
versions.py's jars, the Kubernetes Job's manifest, the tier image's recipe), not written
here a second time."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import tomllib

from airflow_provider_kafkaspark.backends import BackendKind, backend_kind
from airflow_provider_kafkaspark.backends.kubernetes import KubernetesBackend, pod_templates
from airflow_provider_kafkaspark.backends.package_archive import package_zip
from airflow_provider_kafkaspark.core.cluster import kubernetes_job as manifest
from airflow_provider_kafkaspark.core.cluster.kubernetes_pod import (
    DRIVER_TEMPLATE_KEY,
    driver_memory_mib,
)
from airflow_provider_kafkaspark.core.kafka.security import check
from airflow_provider_kafkaspark.core.spec.job_code import (
    check_code_visible,
    resolve_pod_templates,
    resolve_python_path,
)
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.hooks.kafkaspark import KafkaSparkHook
from airflow_provider_kafkaspark.spark.jars import jar_file_name
from airflow_provider_kafkaspark.spark.query import load_transformation
from airflow_provider_kafkaspark.versions import spark_line
from kafkaspark_devstack.k8s import image as tier_image

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "production"
JOBS = EXAMPLES / "jobs"
BACKENDS = ("yarn", "kubernetes")
DAG_IDS = [
    "clickstream_backfill",
    "clickstream_deploy",
    "clickstream_restart_window",
    "clickstream_watch",
]
CONN_TYPES = {"kafka", "spark", "aws", "kubernetes"}
_CONN_LINE = re.compile(r"^AIRFLOW_CONN_[A-Z0-9_]+=")

# -- the connections ----------------------------------------------------------------------


def connection_lines(backend: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """connections.env's AIRFLOW_CONN_* lines, as a shell reads them: the active variables,
    and the commented alternatives (`# AIRFLOW_CONN_...=...`), each (name, value)."""
    active: dict[str, str] = {}
    alternatives: list[tuple[str, str]] = []
    for line in (EXAMPLES / backend / "connections.env").read_text().splitlines():
        stripped = line.strip()
        body = stripped.lstrip("#").strip()
        if not _CONN_LINE.match(body):
            continue
        words = shlex.split(body)
        assert len(words) == 1, f"{backend}/connections.env: one assignment a line: {body[:60]}"
        name, _, value = words[0].partition("=")
        if stripped.startswith("#"):
            alternatives.append((name, value))
        else:
            assert name not in active, f"{backend}/connections.env: {name} twice"
            active[name] = value
    return active, alternatives


def conn_id(variable: str) -> str:
    return variable.removeprefix("AIRFLOW_CONN_").lower()


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_connection_is_json_of_an_official_type(backend: str) -> None:
    active, alternatives = connection_lines(backend)
    assert active
    for name, value in [*active.items(), *alternatives]:
        conn = json.loads(value)
        assert conn["conn_type"] in CONN_TYPES, name
        extra = conn.get("extra", {})
        assert isinstance(extra, dict), name
        if conn["conn_type"] == "kafka":
            assert extra["bootstrap.servers"], name
            check(extra, name)  # the security settings fit together, as a submit checks
        if conn["conn_type"] == "aws":
            assert bool(conn.get("login")) == bool(conn.get("password")), name
        if conn["conn_type"] == "kubernetes":
            given = {"kube_config_path", "kube_config", "in_cluster"} & set(extra)
            assert len(given) == 1, name
    # An alternative replaces an active line of the same connection.
    assert {name for name, _ in alternatives} <= set(active)
    assert {json.loads(v)["conn_type"] for v in active.values()} == (
        {"kafka", "spark", "aws"} if backend == "yarn" else CONN_TYPES
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_spark_connection_picks_the_backend(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    active, alternatives = connection_lines(backend)
    spark = [(n, v) for n, v in [*active.items(), *alternatives] if '"spark"' in v]
    assert spark
    for name, value in spark:
        monkeypatch.setenv(name, value)
        master, mode = KafkaSparkHook(spark_conn_id=conn_id(name)).spark_connection()
        kind = backend_kind(master, mode)
        assert kind is (BackendKind.YARN if backend == "yarn" else BackendKind.KUBERNETES)


# -- the DAGs, parsed by Airflow ----------------------------------------------------------

PROBE = r"""
import json, sys
from pathlib import Path

folder = Path(sys.argv[1])
try:
    from airflow.dag_processing.dagbag import BundleDagBag
except ImportError:  # before Airflow 3.2: the DAG folder on sys.path as the processor has it
    sys.path.append(str(folder))
    from airflow.models.dagbag import DagBag
    bag = DagBag(dag_folder=str(folder))
else:
    bag = BundleDagBag(dag_folder=str(folder), bundle_path=folder)
FIELDS = (
    "job_spec", "kafka_conn_id", "spark_conn_id", "aws_conn_id", "kubernetes_conn_id", "jars",
    "savepoint_root", "upgrade_mode", "restart_nonce", "warm_handover", "checkpoint",
    "job_name", "output_root", "master", "deferrable",
)
dags = {}
for dag in bag.dags.values():
    dags[dag.dag_id] = {
        "fileloc": dag.fileloc,
        "timetable": type(dag.timetable).__name__,
        "tasks": [
            {
                "class": type(task).__name__,
                "callbacks": [c.__name__ for c in (task.on_execute_callback or [])],
                **{f: getattr(task, f) for f in FIELDS if hasattr(task, f)},
            }
            for task in dag.tasks
        ],
    }
print(json.dumps({
    "dags": dags,
    "errors": {k: str(v) for k, v in bag.import_errors.items()},
    "heavy": sorted(m for m in ("pyspark", "confluent_kafka", "clickstream") if m in sys.modules),
}, default=str))
"""


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each backend's dags/ through Airflow's DagBag, in a process of its own with only the
    example's connections (the other CLICKSTREAM_* settings at their placeholders)."""
    found: dict[str, dict[str, Any]] = {}
    for backend in BACKENDS:
        active, _ = connection_lines(backend)
        home = tmp_path_factory.mktemp(f"airflow-{backend}")
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, str(EXAMPLES / backend / "dags")],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env={
                "AIRFLOW_HOME": str(home),
                "PATH": "/usr/bin:/bin",
                # No compiled files left in the examples' folders.
                "PYTHONDONTWRITEBYTECODE": "1",
                **active,
            },
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        found[backend] = json.loads(proc.stdout.strip().splitlines()[-1])
    return found


def only_task(result: dict[str, Any], dag_id: str) -> dict[str, Any]:
    tasks = result["dags"][dag_id]["tasks"]
    assert len(tasks) == 1, dag_id
    return dict(tasks[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_dags_parse_without_errors_or_heavy_imports(
    backend: str, parsed: dict[str, dict[str, Any]]
) -> None:
    result = parsed[backend]
    assert result["errors"] == {}
    assert sorted(result["dags"]) == DAG_IDS
    # Parsing imports neither the job's code nor the driver's libraries.
    assert result["heavy"] == []
    classes = {dag_id: only_task(result, dag_id)["class"] for dag_id in DAG_IDS}
    assert classes == {
        "clickstream_backfill": "KafkaBackfillOperator",
        "clickstream_deploy": "DeployStreamingJobOperator",
        "clickstream_restart_window": "DeployStreamingJobOperator",
        "clickstream_watch": "StreamingWatchSensor",
    }
    window = only_task(result, "clickstream_restart_window")
    assert window["restart_nonce"] == "{{ run_id }}"
    assert window["warm_handover"] is True
    assert only_task(result, "clickstream_watch")["deferrable"] is True
    # A backfill needs a data interval: a timetable that gives one.
    assert result["dags"]["clickstream_backfill"]["timetable"] == "CronDataIntervalTimetable"
    assert only_task(result, "clickstream_backfill")["callbacks"] == ["job_code_on_pythonpath"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_tasks_name_the_connections_of_connections_env(
    backend: str, parsed: dict[str, dict[str, Any]]
) -> None:
    active, _ = connection_lines(backend)
    defined = {conn_id(name): json.loads(value)["conn_type"] for name, value in active.items()}
    wanted = {
        "kafka_conn_id": "kafka",
        "spark_conn_id": "spark",
        "aws_conn_id": "aws",
        "kubernetes_conn_id": "kubernetes",
    }
    for dag_id in DAG_IDS:
        task = only_task(parsed[backend], dag_id)
        for field, conn_type in wanted.items():
            if task.get(field):
                assert defined.get(task[field]) == conn_type, (dag_id, field)
    deploy = only_task(parsed[backend], "clickstream_deploy")
    if backend == "kubernetes":
        # Stop and status from a reference alone use the cncf provider's default connection.
        assert deploy["kubernetes_conn_id"] == "kubernetes_default"
    else:
        assert deploy["spark_conn_id"] and deploy["jars"]


def spec_of(task: dict[str, Any], dags: Path) -> JobSpec:
    """The task's spec as a submit prepares it: validated, its python_path and pod templates
    resolved against the DAG folder, the transformation's module found there."""
    spec = JobSpec.from_json(json.dumps(task["job_spec"]))
    spec = resolve_pod_templates(resolve_python_path(spec, str(dags)), str(dags))
    check_code_visible(spec, search_path=[])
    return spec


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_job_spec_passes_a_submits_checks(
    backend: str, parsed: dict[str, dict[str, Any]]
) -> None:
    result = parsed[backend]
    dags = Path(result["dags"]["clickstream_deploy"]["fileloc"]).parent
    specs = {
        dag_id: spec_of(only_task(result, dag_id), dags)
        for dag_id in ("clickstream_deploy", "clickstream_restart_window", "clickstream_backfill")
    }
    deploy = specs["clickstream_deploy"]
    # The window and the backfill run the deployed job, nothing else.
    assert specs["clickstream_restart_window"] == deploy == specs["clickstream_backfill"]
    assert deploy.python_path == (str(JOBS),)
    assert deploy.sink.kind == "kafka_exactly_once"
    assert deploy.checkpoint_location.startswith("s3://")
    watch = only_task(result, "clickstream_watch")
    assert (watch["checkpoint"], watch["job_name"]) == (deploy.checkpoint_location, deploy.job_name)
    for dag_id in ("clickstream_deploy", "clickstream_restart_window"):
        task = only_task(result, dag_id)
        assert task["upgrade_mode"] == "savepoint"
        assert task["savepoint_root"].startswith("s3://")
    # Spark's S3 file system serves s3a:// only, and the backfill hands its folder to Spark.
    assert only_task(result, "clickstream_backfill")["output_root"].startswith("s3a://")


# -- the job's code -----------------------------------------------------------------------


@pytest.fixture
def job_code(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The jobs folder on sys.path, as the driver puts a shipped python_path entry there."""
    monkeypatch.syspath_prepend(str(JOBS))
    yield
    for name in [m for m in sys.modules if m == "clickstream" or m.startswith("clickstream.")]:
        del sys.modules[name]


def test_the_transformation_is_what_the_driver_calls(
    job_code: None, parsed: dict[str, dict[str, Any]]
) -> None:
    spec = JobSpec.from_dict(only_task(parsed["yarn"], "clickstream_deploy")["job_spec"])
    transform = load_transformation(spec)  # the driver's own loader
    signature = inspect.signature(transform)
    (parameter,) = signature.parameters.values()
    assert parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
    assert parameter.default is parameter.empty
    assert (parameter.annotation, signature.return_annotation) == ("DataFrame", "DataFrame")
    module = sys.modules[transform.__module__]
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text())
    # pyspark only inside the function (the module is importable where pyspark is not) ...
    top_level = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    assert not any("pyspark" in ast.unparse(n) for n in top_level)
    # ... and each of its functions is one pyspark has.
    from pyspark.sql import functions

    used = {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "F"
    }
    assert used and all(hasattr(functions, name) for name in used), sorted(used)


def settings_module(backend: str) -> ModuleType:
    """A backend's clickstream_settings.py, loaded under a name of its own."""
    path = EXAMPLES / backend / "dags" / "clickstream_settings.py"
    found = importlib.util.spec_from_file_location(f"clickstream_settings_{backend}", path)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_backfill_puts_the_job_code_on_the_drivers_path(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    settings_module(backend).job_code_on_pythonpath({})
    first, rest = os.environ["PYTHONPATH"].split(os.pathsep, 1)
    assert (Path(first), rest) == (JOBS, "/elsewhere")
    assert (JOBS / "clickstream" / "sessions.py").is_file()


def test_the_yarn_jars_are_the_connector_and_s3a_of_the_jobs_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CLICKSTREAM_JARS", raising=False)
    settings = settings_module("yarn")
    line = spark_line(settings.SPARK_VERSION)
    wanted = [jar_file_name(c) for c in (*line.connector_artifacts(), *line.s3a_artifacts())]
    assert list(settings.NODE_JARS) == wanted
    assert settings.JARS.split(",") == [f"local:{settings.NODE_JARS_DIR}/{n}" for n in wanted]


# -- Kubernetes: the driver pod, the RBAC -------------------------------------------------


def k8s_spec(parsed: dict[str, dict[str, Any]]) -> JobSpec:
    result = parsed["kubernetes"]
    dags = Path(result["dags"]["clickstream_deploy"]["fileloc"]).parent
    return spec_of(only_task(result, "clickstream_deploy"), dags)


def driver_job(spec: JobSpec) -> tuple[dict[str, Any], list[str]]:
    """The Kubernetes Job a submit of `spec` creates and the files its ConfigMap ships, as
    the backend builds them (no API server involved)."""
    templates = pod_templates(spec)
    settings = manifest.DriverPodSettings.from_spark_conf(
        spec.spark_conf,
        "streaming",
        job_name=spec.job_name,
        template=templates.get(DRIVER_TEMPLATE_KEY),
    )
    name = manifest.resource_name(spec.job_name, "0123abcd")
    # The code the ConfigMap holds (the provider's zip, the job's python_path), checked
    # against a ConfigMap's size limit.
    code, _ = KubernetesBackend()._job_files(spec, settings, name, [])
    job = manifest.job_manifest(
        name=name,
        job_name=spec.job_name,
        checkpoint=spec.checkpoint_location,
        shipped=list(code),
        env_names=[],
        settings=settings,
        policy=None,
    )
    return job, list(code)


def test_the_driver_pod_has_the_examples_size_and_place(
    parsed: dict[str, dict[str, Any]],
) -> None:
    spec = k8s_spec(parsed)
    pod = driver_job(spec)[0]["spec"]["template"]
    container = pod["spec"]["containers"][0]
    conf = spec.spark_conf
    memory = f"{driver_memory_mib(conf, spec.job_name)}Mi"
    assert container["resources"] == {
        "requests": {"cpu": conf["spark.kubernetes.driver.request.cores"], "memory": memory},
        "limits": {"cpu": conf["spark.kubernetes.driver.limit.cores"], "memory": memory},
    }
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["spec"]["imagePullSecrets"] == [
        {"name": conf["spark.kubernetes.container.image.pullSecrets"]}
    ]
    # The template's tolerations and affinity, next to the Job's own for a lost node.
    tolerations = {t["key"]: t for t in pod["spec"]["tolerations"]}
    assert tolerations["dedicated"]["effect"] == "NoSchedule"
    lost_after = int(conf[manifest.NODE_LOST_KEY])
    assert tolerations["node.kubernetes.io/unreachable"]["tolerationSeconds"] == lost_after
    affinity = pod["spec"]["affinity"]
    assert affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    # The anti-affinity names the label the driver pods carry.
    (term,) = affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    selector = term["podAffinityTerm"]["labelSelector"]["matchLabels"]
    assert selector.items() <= pod["metadata"]["labels"].items()
    assert container["securityContext"] == {"allowPrivilegeEscalation": False}


def test_the_driver_runs_as_the_rbacs_service_account(
    parsed: dict[str, dict[str, Any]],
) -> None:
    pod = driver_job(k8s_spec(parsed))[0]["spec"]["template"]
    text = (EXAMPLES / "kubernetes" / "rbac" / "driver-rbac.yaml").read_text()
    assert f"kind: ServiceAccount\nmetadata:\n  name: {pod['spec']['serviceAccountName']}\n" in text


@pytest.mark.parametrize("name", ["driver-rbac.yaml", "airflow-rbac.yaml"])
def test_the_rbac_is_docs_kubernetes(name: str) -> None:
    copied = (EXAMPLES / "kubernetes" / "rbac" / name).read_bytes()
    assert copied == (ROOT / "docs" / "kubernetes" / name).read_bytes(), (
        f"examples/production/kubernetes/rbac/{name} differs from docs/kubernetes/{name}: "
        f"copy it again"
    )


# -- Kubernetes: the Dockerfile and the tier's image --------------------------------------


class Dockerfile:
    """The instructions of a Dockerfile, its ARGs substituted (defaults only)."""

    def __init__(self, path: Path) -> None:
        joined = re.sub(r"\\\n", " ", path.read_text())
        lines = [ln.strip() for ln in joined.splitlines()]
        self.instructions: list[tuple[str, str]] = []
        args: dict[str, str] = {}
        for line in lines:
            if not line or line.startswith("#"):
                continue
            keyword, _, rest = line.partition(" ")
            keyword = keyword.upper()
            if keyword == "ARG":
                name, _, default = rest.strip().partition("=")
                if default:
                    args[name] = default
                continue
            self.instructions.append((keyword, self._substituted(rest.strip(), args)))
        self.args = args

    @staticmethod
    def _substituted(text: str, args: dict[str, str]) -> str:
        for name, value in args.items():
            text = text.replace("${" + name + "}", value).replace("$" + name, value)
        return text

    def all(self, keyword: str) -> list[str]:
        return [rest for kw, rest in self.instructions if kw == keyword]

    def last(self, keyword: str) -> str:
        return self.all(keyword)[-1]

    def env(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for rest in self.all("ENV"):
            for word in shlex.split(rest):
                name, _, value = word.partition("=")
                found[name] = value
        return found

    def run_text(self) -> str:
        return "\n".join(self.all("RUN"))


@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return Dockerfile(EXAMPLES / "kubernetes" / "Dockerfile")


def tier_image_config() -> dict[str, Any]:
    """The `ImageConfig(...)` the tier's `driver_image` writes, read from its source and
    evaluated in the module's namespace (its entrypoint and working folder)."""
    source = Path(tier_image.__file__).read_text()
    function = next(
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.FunctionDef) and n.name == "driver_image"
    )
    call = next(
        n
        for n in ast.walk(function)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "ImageConfig"
    )
    namespace = vars(tier_image)
    return {
        kw.arg: eval(compile(ast.Expression(kw.value), "image.py", "eval"), namespace)
        for kw in call.keywords
        if kw.arg is not None
    }


def requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()


def test_the_image_has_the_tiers_spark_release(dockerfile: Dockerfile) -> None:
    tier = {requirement_name(r): r for r in tier_image.driver_requirements()}
    base = dockerfile.last("FROM")
    match = re.fullmatch(r"apache/spark:(\d+\.\d+\.\d+)-python3", base)
    assert match, base
    # The tier's pyspark is a wheel; this image's is Spark's own, of the same release.
    assert tier["pyspark"] == f"pyspark=={match.group(1)}"
    assert f"pyspark.__version__ == '{match.group(1)}'" in dockerfile.run_text()


def test_the_image_installs_the_driver_extra_as_the_tier_does(dockerfile: Dockerfile) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    driver_extra = project["optional-dependencies"]["driver"]
    venv = tier_image.VENV
    installs = [
        shlex.split(command)
        for command in re.split(r";\s*", dockerfile.run_text())
        if command.strip().startswith(f"{venv}/bin/pip install")
    ]
    assert len(installs) == 1, installs
    packages = [w for w in installs[0][2:] if not w.startswith("-")]
    assert sorted(packages) == sorted(driver_extra)
    # The tier's image: pyspark and the same packages (pinned to this environment's).
    tier = {requirement_name(r) for r in tier_image.driver_requirements()}
    assert {requirement_name(p) for p in packages} == tier - {"pyspark"}
    # Not the provider: each submit ships it (below), as to the tier's image.
    assert project["name"] not in dockerfile.run_text()
    assert f"python3 -m venv {venv}" in dockerfile.run_text()


def test_the_image_paths_are_the_tiers(dockerfile: Dockerfile) -> None:
    env, tier_env = dockerfile.env(), tier_image.driver_env()
    for name in ("SPARK_HOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "LANG"):
        assert env[name] == tier_env[name], name
    path, tier_path = env["PATH"].split(":"), tier_env["PATH"].split(":")
    # The venv first (its python3 is the driver's), Spark's scripts next, as in the tier.
    assert path[:2] == tier_path[:2] == [f"{tier_image.VENV}/bin", f"{tier_image.SPARK_HOME}/bin"]
    assert dockerfile.last("WORKDIR") == tier_image_config()["working_dir"]
    assert f"cd {tier_image.SPARK_HOME}/jars" in dockerfile.run_text()
    # Spark's own image's user, by number (a pod's runAsNonRoot checks a number).
    assert dockerfile.last("USER") == "185"


def test_the_image_has_the_jars_of_its_spark_release(dockerfile: Dockerfile) -> None:
    release = re.fullmatch(r"apache/spark:(\S+)-python3", dockerfile.last("FROM"))
    assert release
    line = spark_line(release.group(1))
    maven_paths = re.findall(r"(?<=\s)((?:[\w.-]+/){3,}[\w.-]+\.jar)(?=\s)", dockerfile.run_text())
    coordinates = []
    for maven_path in maven_paths:
        *group, artifact, version, file_name = maven_path.split("/")
        assert file_name == f"{artifact}-{version}.jar", maven_path
        coordinates.append(f"{'.'.join(group)}:{artifact}:{version}")
    # The tier's image copies the same two sets (connector_bundle, s3a_bundle) into jars/.
    assert coordinates == [*line.connector_artifacts(), *line.s3a_artifacts()]


def test_the_drivers_job_runs_under_the_images_entrypoint_as_in_the_tier(
    dockerfile: Dockerfile, parsed: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    job, shipped = driver_job(k8s_spec(parsed))
    (container,) = job["spec"]["template"]["spec"]["containers"]
    # Arguments, not a command: the image's entrypoint stays in front of them.
    assert "command" not in container
    python, flag, module = container["args"][:3]
    assert flag == "-m"
    # `python3` is the venv's, first on the image's PATH, with pyspark and the driver extra.
    assert python == "python3"
    assert dockerfile.env()["PATH"].split(":")[0] == f"{tier_image.VENV}/bin"
    # The module is the provider's, which the Job ships (its zip in the ConfigMap, on
    # PYTHONPATH), so the image needs no provider. The Job sets PYTHONPATH itself: the image
    # must not rely on one (its pyspark comes from a .pth file).
    provider_zip = package_zip(tmp_path).name
    assert provider_zip in shipped
    assert module.split(".")[0] == provider_zip.removesuffix(".zip")
    variables = {e["name"]: e.get("value") for e in container["env"]}
    assert f"{manifest.JOB_FILES}/{provider_zip}" in variables["PYTHONPATH"].split(":")
    assert "PYTHONPATH" not in dockerfile.env()
    assert ".pth" in dockerfile.run_text()
    # The tier's entrypoint runs every command under tini; Spark's runs a plain command
    # without, so the image puts the same tini in front of Spark's entrypoint.
    tier_entrypoint = tier_image_config()["entrypoint"]
    script = (Path(tier_image.__file__).parent / "entrypoint.sh").read_text()
    last_exec = [ln.strip() for ln in script.splitlines() if ln.strip().startswith("exec ")][-1]
    tini = shlex.split(last_exec)[1:-1]
    assert tini[0] == "/usr/bin/tini"
    assert json.loads(dockerfile.last("ENTRYPOINT")) == [*tini, *tier_entrypoint]
