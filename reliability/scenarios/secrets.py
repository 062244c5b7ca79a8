"""Secrets: a sentinel password in the Kafka connection (SASL settings) never shows in logs,
XCom, progress files, savepoint manifests or exception messages.

The broker gets a SASL_PLAINTEXT/PLAIN listener that knows one user, whose password is a
sentinel made for this run. An Airflow `kafka` connection carries it in its extra
(`sasl.password`), and `airflow dags test` runs a small DAG on SQLite: submit, health sensor,
stop with a savepoint, all through that connection, so a real Spark job authenticates with
the sentinel and commits batches. Then, against the same broker, failures whose messages
could carry a password are provoked in-process: a wrong password (a second sentinel), an
unreachable SASL bootstrap, bad job specs, a SASL config librdkafka rejects.

Every place is then searched for every sentinel: the task logs, XCom and rendered fields in
the Airflow database, the driver log and command line, the control folder (files, and
snapshots taken while the job ran, for the lease), savepoint manifests, each exception and
log line of the provoked failures, and every file under the work folder, the job spec files
the driver reads included (mode 0600, and without the password: a submit leaves secrets out
of every file it writes). Only the broker's own config (server.properties, and the local
stack's cluster.json that records it) may hold the password, and the live driver's
environment only in the provider's own secret variables (`KAFKASPARK_SECRET_*`), the channel
a local driver gets its secrets through: Airflow is given the connection as an
`AIRFLOW_CONN_*` variable here, and the package must not hand that variable to the driver.
"""

from __future__ import annotations

import json
import logging
import os
import random
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from reliability import stack
from reliability.model import Profile, ScenarioResult

if TYPE_CHECKING:
    from airflow.sdk import Context

    from kafkaspark_devstack.kafka import LocalKafkaCluster

NAME = "secrets"
TITLE = (
    "Secrets: a sentinel password in the Kafka connection (SASL settings) never shows in "
    "logs, XCom, progress files, savepoint manifests or exception messages"
)

HOST = "127.0.0.1"
SASL_USER = "reliability-user"
JOB = "secrets_job"
SOURCE, SINK = "secrets_source", "secrets_sink"
CONN = "kafka_sasl"
DAG_ID = "kafkaspark_secrets"
LISTENER = "SASL"  # the extra listener's name; its JAAS key is listener.name.sasl.*

# Places that may hold the password: the broker's own config, and the driver's own secret
# variables (its channel for secrets). The rest of the driver's environment is not one: the
# connection reaches Airflow as an AIRFLOW_CONN_* variable, which the driver must not get.
ALLOWED = ("broker_config", "driver_secret_variables")
SECRET_VARIABLE_PREFIX = b"KAFKASPARK_SECRET_"

# The DAG Airflow runs. It names no credentials: the connection's librdkafka SASL settings
# (sasl.username/sasl.password/sasl.mechanisms) alone must configure the Spark Kafka
# source, a Java client, which the package does by translating them to a JAAS line.
DAG_FILE = '''\
"""Written by reliability/scenarios/secrets.py."""

import os

import pendulum
from airflow.sdk import DAG

from airflow_provider_kafkaspark.operators.stop import StopStreamingJobOperator
from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor

HOME = os.environ["KAFKASPARK_SECRETS_HOME"]
CHECKPOINT = f"{HOME}/checkpoint"
SPEC = {
    "job_name": "@JOB@",
    "source": {
        "bootstrap_servers": "from-connection:9092",
        "subscribe": ["@SOURCE@"],
        "starting_offsets": "earliest",
        "max_offsets_per_trigger": 200,
    },
    "transformation": "airflow_provider_kafkaspark.examples.passthrough:transform",
    "sink": {"kind": "kafka_exactly_once", "topic": "@SINK@"},
    "checkpoint_location": CHECKPOINT,
    "trigger_interval": "1 second",
    "lease_ttl_s": 10,
}

with DAG(
    dag_id="@DAG_ID@",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
) as dag:
    submit = SubmitStreamingJobOperator(
        task_id="submit",
        job_spec=SPEC,
        kafka_conn_id="@CONN@",
        workdir=f"{HOME}/drivers",
        max_restarts=0,
    )
    healthy = StreamingHealthSensor(
        task_id="wait_healthy",
        checkpoint=CHECKPOINT,
        kafka_conn_id="@CONN@",
        since_batch=submit.output["since_batch"],
        min_new_batches=2,
        window_s=10,
        poke_interval=2,
        timeout=300,
    )
    stop = StopStreamingJobOperator(
        task_id="stop_with_savepoint",
        checkpoint=CHECKPOINT,
        job_name="@JOB@",
        savepoint_root=f"{HOME}/savepoints",
        handle=submit.output,
        drain_timeout_s=60,
    )
    submit >> healthy >> stop
'''


def jaas(user: str, password: str) -> str:
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{password}";'
    )


# -- the broker -----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def sasl_cluster(base_dir: Path, password: str) -> tuple[LocalKafkaCluster, int]:
    """One node that also listens with SASL_PLAINTEXT/PLAIN for `SASL_USER`.

    The node's ports are chosen here (LocalKafkaCluster's `port` gives port and port+100)
    because the listener lines must name them; inter-broker and controller traffic stays
    on the PLAINTEXT and CONTROLLER listeners the local stack sets. A helper like this one
    belongs in reliability/stack.py once a second scenario needs SASL.
    """
    from kafkaspark_devstack.kafka import LocalKafkaCluster
    from kafkaspark_devstack.ports import port_in_use

    sasl_port = free_port()
    rng = random.Random()
    while True:
        port = rng.randint(20_000, 40_000)
        if sasl_port not in (port, port + 100) and not (
            port_in_use(port) or port_in_use(port + 100)
        ):
            break
    controller = port + 100
    config = {
        "listeners": (
            f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller},"
            f"{LISTENER}://{HOST}:{sasl_port}"
        ),
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port},{LISTENER}://{HOST}:{sasl_port}",
        "listener.security.protocol.map": (
            f"CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,{LISTENER}:SASL_PLAINTEXT"
        ),
        "sasl.enabled.mechanisms": "PLAIN",
        f"listener.name.{LISTENER.lower()}.plain.sasl.jaas.config": (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_{SASL_USER}="{password}";'
        ),
    }
    return LocalKafkaCluster(base_dir, port=port, broker_config=config), sasl_port


def sasl_extra(servers: str, password: str, **more: str) -> dict[str, str]:
    """A `kafka` connection's extra: the librdkafka client config."""
    return {
        "bootstrap.servers": servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": SASL_USER,
        "sasl.password": password,
        **more,
    }


def connection_env(conn_id: str, extra: dict[str, str]) -> tuple[str, str]:
    return f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "kafka", "extra": extra})


# -- searching for the sentinels ----------------------------------------------------------


@dataclass
class Scan:
    """Occurrences of each sentinel per place; `records` counts what was searched."""

    needles: dict[str, str]
    occurrences: Counter[str] = field(default_factory=Counter)
    hits: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    records: int = 0

    def text(self, place: str, where: str, text: str) -> None:
        self.data(place, where, text.encode("utf-8", "replace"))

    def data(self, place: str, where: str, data: bytes) -> None:
        self.records += 1
        self.occurrences.setdefault(place, 0)
        for label, needle in self.needles.items():
            raw = needle.encode()
            count = data.count(raw)
            if count:
                self.occurrences[place] += count
                at = data.index(raw)
                # Enough around the first one to find the code that wrote it; the sentinel
                # itself is shown by name only.
                shown = data[max(0, at - 120) : at + len(raw) + 40].decode("utf-8", "replace")
                for other, value in self.needles.items():
                    shown = shown.replace(value, f"<{other}>")
                shown = shown.replace("\n", " ")
                self.hits.append(f"{place}: {where}: {count}x the {label}: ...{shown}...")

    def file(self, place: str, path: Path, root: Path) -> None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            self.unreadable.append(f"{path.relative_to(root)}: {exc.strerror}")
            return
        self.data(place, str(path.relative_to(root)), data)


def file_place(rel: Path) -> str:
    """Which place a file under the work folder belongs to."""
    parts = rel.parts
    name = rel.name
    if parts[0] == "kafka" and name in ("server.properties", "cluster.json"):
        return "broker_config"
    if name.endswith(".spec.json"):
        return "spec_file"
    if "_kafkaspark" in parts:
        return "control_files"
    if parts[0] == "savepoints":
        return "savepoint_manifests" if name == "manifest.json" else "savepoint_files"
    if parts[0] == "drivers" and name.endswith(".log"):
        return "driver_log"
    if name == "dags-test.log" or (parts[0] == "airflow" and "logs" in parts):
        return "task_logs"
    if parts[0] == "airflow" and name.startswith("airflow.db"):
        return "airflow_db"
    if name == "provoked.log":
        return "in_process_output"
    return "other_files"


class ControlWatcher(threading.Thread):
    """Keeps every distinct content of the control folder's files while the job runs (the
    lease exists only then), and the live driver's command line and environment."""

    def __init__(self, control: Path) -> None:
        super().__init__(daemon=True, name="secrets-control-watcher")
        self.control = control
        self.contents: dict[tuple[str, str], None] = {}
        self.procs: dict[tuple[int, str], bytes] = {}
        self._stop_event = threading.Event()

    def stop(self) -> None:
        self._stop_event.set()

    def run(self) -> None:
        while not self._stop_event.wait(0.5):
            if not self.control.is_dir():
                continue
            for path in self.control.iterdir():
                with suppress(OSError):
                    self.contents[(path.name, path.read_text(errors="replace"))] = None
                if path.name == "lease.json":
                    self._read_process(path)

    def _read_process(self, lease: Path) -> None:
        try:
            pid = int(json.loads(lease.read_text())["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return
        for what in ("cmdline", "environ"):
            if (pid, what) not in self.procs:
                with suppress(OSError):
                    self.procs[(pid, what)] = Path(f"/proc/{pid}/{what}").read_bytes()


# -- provoked failures ----------------------------------------------------------------------


@dataclass
class Provoked:
    name: str
    outcome: str  # the exception's type, or what the call returned
    text: str  # the whole exception chain as a traceback prints it ("" when none)


class FakeTI:
    """The task instance methods the operators call; what they push is searched as XCom."""

    def __init__(self) -> None:
        self.pushed: list[str] = []

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed.append(f"{key}={json.dumps(value, default=str)}")


class LogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = f"{record.name} {record.levelname}: {record.getMessage()}"
        if record.exc_info:
            line += "\n" + "".join(traceback.format_exception(*record.exc_info))
        self.lines.append(line)


@contextmanager
def captured(output: Path) -> Iterator[LogCapture]:
    """Log records of every logger, and whatever reaches file descriptors 1 and 2 (librdkafka
    writes there from C), for the duration of the block."""
    capture = LogCapture()
    loggers = [logging.getLogger(), logging.getLogger("airflow.task")]
    root_level = loggers[0].level
    loggers[0].setLevel(logging.DEBUG)
    for logger in loggers:
        logger.addHandler(capture)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with output.open("ab") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        try:
            yield capture
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            for logger in loggers:
                logger.removeHandler(capture)
            loggers[0].setLevel(root_level)


def provoke(name: str, act: Callable[[], object]) -> Provoked:
    try:
        value = act()
    except Exception as exc:  # noqa: BLE001 - the failure is the point; its text is searched
        return Provoked(name, type(exc).__name__, "".join(traceback.format_exception(exc)))
    shown = getattr(value, "xcom_value", value)
    return Provoked(name, f"no error (returned {shown!r})"[:300], "")


def provoked_failures(
    home: Path, sasl_servers: str, password: str, wrong: str, ti: FakeTI
) -> list[Provoked]:
    """Calls whose error messages could carry the password, each made the way a task or a
    DAG author makes it."""
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
    from airflow_provider_kafkaspark.operators.reconcile import KafkaPartitionReconcileOperator
    from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
    from airflow_provider_kafkaspark.sensors.bootstrap import KafkaBootstrapHealthSensor
    from airflow_provider_kafkaspark.sensors.health import StreamingHealthSensor

    checkpoint = str(home / "checkpoint")
    context = cast("Context", {"ti": ti})
    spec = {
        "job_name": JOB,
        "source": {
            "bootstrap_servers": "from-connection:9092",
            "subscribe": [SOURCE],
            # A JAAS line a DAG author may still write by hand: its errors must not show it.
            "options": {
                "kafka.sasl.mechanism": "PLAIN",
                "kafka.sasl.jaas.config": jaas(SASL_USER, password),
            },
        },
        "sink": {"kind": "kafka_exactly_once", "topic": SINK},
        "checkpoint_location": str(home / "provoked-checkpoint"),
    }
    dead = f"{HOST}:{free_port()}"  # nothing listens: the port was free a moment ago

    def submit(conn_id: str, job_spec: dict[str, Any]) -> Callable[[], object]:
        op = SubmitStreamingJobOperator(
            task_id="submit",
            job_spec=job_spec,
            kafka_conn_id=conn_id,
            workdir=str(home / "provoked-drivers"),
            probe_timeout_s=4,
        )
        return lambda: op.execute(context)

    def reconcile(conn_id: str) -> Callable[[], object]:
        op = KafkaPartitionReconcileOperator(
            task_id="reconcile",
            checkpoint=checkpoint,
            kafka_conn_id=conn_id,
            subscribe=[SOURCE],
            kafka_timeout_s=4,
        )
        return lambda: op.execute(context)

    def health(conn_id: str) -> Callable[[], object]:
        sensor = StreamingHealthSensor(
            task_id="healthy", checkpoint=checkpoint, kafka_conn_id=conn_id, kafka_timeout_s=4
        )

        def poke() -> object:
            try:
                return sensor.poke(context)
            finally:
                sensor.close()

        return poke

    def bootstrap(conn_id: str) -> Callable[[], object]:
        sensor = KafkaBootstrapHealthSensor(task_id="bootstrap", kafka_conn_id=conn_id)
        return lambda: sensor.poke(context)

    def with_options_as_text() -> dict[str, Any]:
        bad: dict[str, Any] = json.loads(json.dumps(spec))
        bad["source"]["options"] = f"kafka.sasl.jaas.config={jaas(SASL_USER, password)}"
        return bad

    def truncated_spec_file() -> object:
        path = home / "provoked-truncated.json"
        text = json.dumps({**spec, "kafka_config": sasl_extra(sasl_servers, password)})
        path.write_text(text[: text.index(password) + len(password)])
        try:
            return JobSpec.load(path)
        finally:
            path.unlink()

    connections = {
        "kafka_wrong_password": sasl_extra(sasl_servers, wrong),
        "kafka_sasl_unreachable": sasl_extra(dead, password),
        "kafka_sasl_rejected": sasl_extra(sasl_servers, password, **{"sasl.mechanisms": "PLAN"}),
        CONN: sasl_extra(sasl_servers, password),
    }
    bad_interval = {**spec, "trigger_interval": "whenever"}
    calls: list[tuple[str, Callable[[], object]]] = [
        ("wrong password: bootstrap sensor", bootstrap("kafka_wrong_password")),
        ("wrong password: submit probe", submit("kafka_wrong_password", spec)),
        ("wrong password: reconcile", reconcile("kafka_wrong_password")),
        ("wrong password: health sensor", health("kafka_wrong_password")),
        ("unreachable SASL bootstrap: submit probe", submit("kafka_sasl_unreachable", spec)),
        ("unreachable SASL bootstrap: reconcile", reconcile("kafka_sasl_unreachable")),
        ("mechanism librdkafka rejects: reconcile", reconcile("kafka_sasl_rejected")),
        ("bad spec: trigger interval", submit(CONN, bad_interval)),
        ("bad spec: source options as text", submit(CONN, with_options_as_text())),
        ("bad spec: truncated spec file", truncated_spec_file),
    ]
    values = dict(connection_env(conn_id, extra) for conn_id, extra in connections.items())
    saved = {key: os.environ.get(key) for key in values}
    try:
        os.environ.update(values)
        return [provoke(name, act) for name, act in calls]
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


# -- Airflow --------------------------------------------------------------------------------


def airflow_env(workdir: Path, servers: str, password: str) -> dict[str, str]:
    home = workdir / "airflow"
    key, value = connection_env(CONN, sasl_extra(servers, password))
    return {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(workdir / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        key: value,
        "KAFKASPARK_SECRETS_HOME": str(workdir),
    }


def airflow_command(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "airflow"), *args]


def read_database(db: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(task, XCom value) and (task, rendered fields) rows of the Airflow database."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        xcom = conn.execute("SELECT task_id, key, value FROM xcom").fetchall()
        rendered = conn.execute(
            "SELECT task_id, rendered_fields FROM rendered_task_instance_fields"
        ).fetchall()
    return (
        [(f"{task}.{key}", _text(value)) for task, key, value in xcom],
        [(str(task), _text(value)) for task, value in rendered],
    )


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def submit_handle(xcom: list[tuple[str, str]]) -> dict[str, Any]:
    for where, value in xcom:
        if where == "submit.return_value":
            raw = json.loads(value)
            return dict(raw) if isinstance(raw, dict) else {}
    return {}


# -- the scenario ---------------------------------------------------------------------------


def run(profile: Profile, workdir: Path) -> ScenarioResult:
    result = ScenarioResult(name=NAME, title=TITLE)
    password = f"sentinel-{uuid.uuid4().hex}"
    wrong = f"wrong-sentinel-{uuid.uuid4().hex}"
    scan = Scan({"password": password, "wrong password": wrong})
    dags = workdir / "dags"
    dags.mkdir()
    text = DAG_FILE
    for key, value in {
        "CONN": CONN,
        "JOB": JOB,
        "SOURCE": SOURCE,
        "SINK": SINK,
        "DAG_ID": DAG_ID,
    }.items():
        text = text.replace(f"@{key}@", value)
    (dags / f"{DAG_ID}.py").write_text(text)

    kafka, sasl_port = sasl_cluster(workdir / "kafka", password)
    sasl_servers = f"{HOST}:{sasl_port}"
    env = airflow_env(workdir, sasl_servers, password)
    # The database migration and the broker start overlap: each takes a while here.
    migrate = subprocess.Popen(
        airflow_command("db", "migrate"),
        env=env,
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    producer: stack.SteadyProducer | None = None
    watcher = ControlWatcher(workdir / "checkpoint" / "_kafkaspark")
    handle: dict[str, Any] = {}
    provoked: list[Provoked] = []
    capture_lines: list[str] = []
    ti = FakeTI()
    try:
        kafka.start(timeout=180)
        plain = kafka.bootstrap_servers
        stack.create_topics(plain, {SOURCE: 1, SINK: 1})
        migrated, _ = migrate.communicate(timeout=600)
        if migrate.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed:\n{migrated.decode()[-3000:]}")
        producer = stack.SteadyProducer(plain, SOURCE, count=100_000, rate=20)
        producer.start()
        watcher.start()

        started = time.monotonic()
        stack.log(NAME, f"airflow dags test {DAG_ID} (SASL bootstrap {sasl_servers})")
        dags_log = workdir / "dags-test.log"
        with dags_log.open("wb") as out:
            dags_test = subprocess.run(
                airflow_command("dags", "test", DAG_ID),
                env=env,
                cwd=workdir,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=600,
                check=False,
            )
        result.checks["dags_test_seconds"] = round(time.monotonic() - started, 1)
        watcher.stop()
        xcom, rendered = read_database(workdir / "airflow" / "airflow.db")
        handle = submit_handle(xcom)
        ok = dags_test.returncode == 0
        if not ok:
            tail = dags_log.read_text(errors="replace").splitlines()[-40:]
            stack.log(NAME, "dags test failed; last lines:\n" + "\n".join(tail))
        result.check("dags_test_succeeded", ok, None if ok else dags_test.returncode)

        committed = stack.committed(workdir / "checkpoint")
        written = len(stack.read_committed(plain, SINK)) if ok else 0
        result.check(
            "job_authenticated_and_committed",
            committed >= 2 and written > 0,
            {"last_committed_batch": committed, "sink_records": written},
        )

        stack.log(NAME, "provoking failures against the SASL listener")
        with captured(workdir / "provoked.log") as capture:
            provoked = provoked_failures(workdir, sasl_servers, password, wrong, ti)
        capture_lines = capture.lines
    finally:
        watcher.stop()
        if watcher.is_alive():
            watcher.join(10)
        if producer is not None:
            producer.stop()
            producer.join(60)
        if migrate.poll() is None:
            migrate.kill()
            migrate.wait()
        _stop_driver(workdir / "checkpoint", handle)
        kafka.stop()

    # -- searching ----------------------------------------------------------------------
    for where, value in xcom:
        scan.text("xcom", where, value)
    for pushed in ti.pushed:
        scan.text("xcom", "provoked failures' xcom_push", pushed)
    for task, value in rendered:
        scan.text("rendered_fields", task, value)
    for (name, content), _ in watcher.contents.items():
        scan.text("control_snapshots", name, content)
    for (pid, what), data in watcher.procs.items():
        if what != "environ":
            scan.data("driver_cmdline", f"/proc/{pid}/{what}", data)
            continue
        for entry in data.split(b"\0"):
            own = entry.startswith(SECRET_VARIABLE_PREFIX)
            place = "driver_secret_variables" if own else "driver_environment"
            scan.data(place, f"/proc/{pid}/environ {entry.split(b'=', 1)[0].decode()}", entry)
    for item in provoked:
        scan.text("exception_messages", item.name, item.text)
    for index, line in enumerate(capture_lines):
        scan.text("in_process_logs", f"log record {index}", line)
    files = sorted(p for p in workdir.rglob("*") if p.is_file() and not p.is_symlink())
    for path in files:
        scan.file(file_place(path.relative_to(workdir)), path, workdir)

    spec_files = [p for p in files if p.name.endswith(".spec.json")]
    modes = {str(p.relative_to(workdir)): oct(stat.S_IMODE(p.stat().st_mode)) for p in spec_files}
    result.check(
        "spec_files_mode_0600", bool(modes) and set(modes.values()) == {"0o600"}, modes or None
    )
    result.check(
        "spec_files_hold_no_password",
        bool(spec_files) and not any(password.encode() in p.read_bytes() for p in spec_files),
        len(spec_files),
    )
    # The password did reach the driver, through its own variable.
    result.check(
        "driver_got_the_password_as_a_secret_variable",
        scan.occurrences["driver_secret_variables"] > 0,
        scan.occurrences["driver_secret_variables"],
    )
    # The wrong password must really reach the broker and be refused there, or the
    # messages searched below were never at risk of carrying it.
    wrong_tries = [p for p in provoked if p.name.startswith("wrong password")]
    refused = [
        text
        for text in [p.text for p in wrong_tries] + capture_lines
        if "Authentication failed" in text
    ]
    result.check("wrong_password_refused_by_the_broker", bool(refused), len(refused))
    # Not a secrets matter, but seen here: which error a refused password gives.
    result.checks["wrong_password_reported_as_access_error"] = {
        p.name: "KafkaAccessError" in p.text for p in wrong_tries
    }
    result.checks["control_files_seen"] = sorted({name for name, _ in watcher.contents})

    occurrences = {place: scan.occurrences[place] for place in sorted(scan.occurrences)}
    result.checks["occurrences"] = occurrences
    result.checks["provoked"] = {p.name: p.outcome for p in provoked}
    result.checks["places_searched"] = {
        "files": len(files),
        "xcom_values": len(xcom) + len(ti.pushed),
        "rendered_field_rows": len(rendered),
        "control_snapshots": len(watcher.contents),
        "exception_messages": sum(1 for p in provoked if p.text),
        "in_process_log_records": len(capture_lines),
    }
    result.checks["rendered_job_spec_masked"] = any(
        task == "submit" and "***" in value for task, value in rendered
    )
    leaks = [h for h in scan.hits if h.split(":", 1)[0] not in ALLOWED]
    environments = sum(1 for _, what in watcher.procs if what == "environ")
    result.check(
        "driver_environment_searched_and_clean",
        environments > 0 and scan.occurrences["driver_environment"] == 0,
        {"environments": environments, "hits": scan.occurrences["driver_environment"]},
    )
    result.check("every_file_readable", not scan.unreadable, scan.unreadable[:5] or None)
    result.check("password_only_where_it_must_be", not leaks, len(leaks))
    for hit in leaks:
        result.failures.append(f"leak: {hit}")
    result.faults_injected = len(provoked)
    result.records_checked = scan.records
    return result


def _stop_driver(checkpoint: Path, handle: dict[str, Any]) -> None:
    """Whatever the DAG left running is stopped (killed after the drain bound)."""
    from airflow_provider_kafkaspark.core.cluster.job_ref import ref_from_handle
    from airflow_provider_kafkaspark.lifecycle.observe import live_lease
    from airflow_provider_kafkaspark.lifecycle.stop import stop_job

    ref = ref_from_handle(
        handle or None,
        job_name=str(handle.get("job_name", "")),
        checkpoint=str(checkpoint),
        host=socket.gethostname(),
        where="submit handle",
    )
    if live_lease(str(checkpoint)) is None:
        return
    stack.log(NAME, "a driver is still running: stopping it")
    try:
        stop_job(
            str(checkpoint),
            requested_by=f"reliability:{NAME}",
            reason="scenario cleanup",
            drain_timeout_s=60,
            ref=ref,
            allow_force_kill=True,
        )
    except Exception as exc:  # noqa: BLE001 - cleanup goes on; the run already failed
        stack.log(NAME, f"could not stop the driver on {checkpoint}: {exc}")
