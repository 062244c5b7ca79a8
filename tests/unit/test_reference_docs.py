"""docs/reference/ says what the code does.

- Each connection page (`docs/reference/connections/<type>.md`) lists exactly the fields and
  extra keys the code reads from that connection type: the tests run the code that reads a
  connection (this package's, and the official hooks' it calls) against a connection that
  records every field and extra key it is asked for, and compare with the page's tables,
  reader by reader where the page says who reads a key. The page's JSON and URI examples
  are connections Airflow reads to the same thing.
- Every constructor parameter of every operator, sensor and trigger (the provider info's
  modules) is documented in its class docstring as `:param name:`, and no docstring
  documents a parameter the constructor does not have; the reference pages render each
  of these classes.
- The CLI page's generator (scripts/docs_hooks.py) names every command, subcommand and flag
  the parser has, with its help.
"""

from __future__ import annotations

import argparse
import base64
import copy
import dataclasses
import importlib
import importlib.util
import inspect
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote

import pytest
from airflow.sdk import BaseHook

from airflow_provider_kafkaspark import get_provider_info
from airflow_provider_kafkaspark.cli import build_parser, installed_subcommands
from airflow_provider_kafkaspark.core.kafka import security
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict
from airflow_provider_kafkaspark.hooks import kafkaspark as hook_module

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
CONNECTIONS = REFERENCE / "connections"
THIS_PACKAGE = "kafkaspark"

# -- a connection that records what is read from it ----------------------------------------


class RecordingDict(dict[str, Any]):
    """A connection's extra that notes each key asked for (`get`, `[]`, `in`, `pop`); a deep
    copy notes into the same set. Iterating over it notes nothing: that is passing the whole
    extra on, not reading a key."""

    def __init__(self, data: Any, seen: set[str], prefix: str = "") -> None:
        super().__init__(data)
        self.seen = seen
        self.prefix = prefix

    def _note(self, key: object) -> None:
        self.seen.add(str(key).removeprefix(self.prefix) if self.prefix else str(key))

    def get(self, key: str, default: Any = None) -> Any:
        self._note(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self._note(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._note(key)
        return super().__contains__(key)

    def pop(self, key: str, *default: Any) -> Any:
        self._note(key)
        return super().pop(key, *default)

    def __deepcopy__(self, memo: dict[int, Any]) -> RecordingDict:
        return RecordingDict(copy.deepcopy(dict(self), memo), self.seen, self.prefix)


class _DictLike(type):
    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, dict)


def recording_dict_type(read: Read) -> type:
    """A stand-in for a module's `dict`: `dict(x)` makes a `RecordingDict` noting into
    `read`, `isinstance(x, dict)` is as before."""

    class RecordingCopy(metaclass=_DictLike):
        def __new__(cls, data: Any = ()) -> Any:
            return RecordingDict(data, read.extras)

    return RecordingCopy


CONNECTION_FIELDS = {"conn_type", "host", "port", "login", "password", "schema", "extra"}


class RecordingConnection:
    """An Airflow connection that notes the fields read from it (`extra_dejson` counts as
    `extra`) and hands out its extra as a `RecordingDict`."""

    def __init__(self, conn: Any, read: Read) -> None:
        self._conn = conn
        self._read = read

    def __getattr__(self, name: str) -> Any:
        field = "extra" if name == "extra_dejson" else name
        if field in CONNECTION_FIELDS:
            self._read.fields.add(field)
        value = getattr(self._conn, name)
        if name == "extra_dejson":
            return RecordingDict(value, self._read.extras, self._read.prefix)
        return value


@dataclasses.dataclass
class Read:
    fields: set[str] = dataclasses.field(default_factory=set)
    extras: set[str] = dataclasses.field(default_factory=set)
    prefix: str = ""


def recording(monkeypatch: pytest.MonkeyPatch, read: Read) -> None:
    """Every `BaseHook.get_connection` (this package's and the official hooks') returns a
    recording connection from now on."""
    original = BaseHook.get_connection.__func__  # type: ignore[attr-defined]

    def get_connection(cls: type[BaseHook], conn_id: str) -> Any:
        return RecordingConnection(original(cls, conn_id), read)

    monkeypatch.setattr(BaseHook, "get_connection", classmethod(get_connection))


def set_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, value: str) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", value)


def attempt(call: Callable[[], Any]) -> None:
    """Run `call` for what it reads; an error after the reads (no cluster, no optional
    package) is no matter here."""
    try:
        call()
    except Exception:  # noqa: BLE001 - what was read before any error is what counts
        pass


# -- the pages ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Row:
    name: str
    readers: frozenset[str]


def section(text: str, heading: str) -> str:
    found = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert found, f"no '## {heading}' section"
    return found.group(1)


def table_rows(text: str) -> list[Row]:
    """The rows of the first table in `text`: the first cell's code span is the name, the
    second cell the readers (`kafkaspark`, a hook's name), comma separated."""
    rows: list[Row] = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 3 or set(cells[0]) <= {"-", ":"}:
            continue
        name = re.fullmatch(r"`([^`]+)`", cells[0])
        if name is None:
            continue  # the header
        readers = frozenset(r.strip() for r in cells[1].split(",") if r.strip())
        rows.append(Row(name.group(1), readers))
    return rows


def page(kind: str) -> str:
    return (CONNECTIONS / f"{kind}.md").read_text()


def documented(kind: str, heading: str, reader: str | None = None) -> set[str]:
    rows = table_rows(section(page(kind), heading))
    assert rows, f"{kind}.md: no rows under '## {heading}'"
    return {r.name for r in rows if reader is None or reader in r.readers}


def examples(kind: str) -> tuple[str, str]:
    """The page's JSON and URI examples: `AIRFLOW_CONN_...='...'` lines, JSON first."""
    lines = re.findall(r"^export AIRFLOW_CONN_[A-Z0-9_]+='([^']+)'$", page(kind), re.M)
    as_json = [line for line in lines if line.startswith("{")]
    as_uri = [line for line in lines if not line.startswith("{")]
    assert as_json and as_uri, f"{kind}.md: needs a JSON and a URI AIRFLOW_CONN_ example"
    return as_json[0], as_uri[0]


def example_connection(monkeypatch: pytest.MonkeyPatch, kind: str, conn_id: str) -> None:
    set_connection(monkeypatch, conn_id, examples(kind)[0])


@pytest.mark.parametrize("kind", ["kafka", "spark", "aws", "kubernetes"])
def test_each_page_s_json_and_uri_examples_are_the_same_connection(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    as_json, as_uri = examples(kind)
    set_connection(monkeypatch, "from_json", as_json)
    set_connection(monkeypatch, "from_uri", as_uri)
    one, other = BaseHook.get_connection("from_json"), BaseHook.get_connection("from_uri")
    assert one.conn_type == other.conn_type == kind
    for name in ("host", "port", "login", "password", "schema"):
        # A URI without a host or a path gives "", the JSON form None: the same to a reader.
        assert (getattr(one, name) or None) == (getattr(other, name) or None), (
            f"{kind}.md examples: {name}"
        )
    assert one.extra_dejson == other.extra_dejson, f"{kind}.md examples: extra"
    assert quote(as_uri, safe=":/?&=%@.,[]-_~+") == as_uri, f"{kind}.md: URI not quoted"


# -- kafka ----------------------------------------------------------------------------------

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
KEY = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"
KEYTAB = security.EMBEDDED + base64.b64encode(b"keytab").decode()

# One connection extra per way the README's security table connects, and the special keys.
KAFKA_EXTRAS: list[dict[str, str]] = [
    {"bootstrap.servers": "b:9092"},
    {"bootstrap.servers": "b:9093", "security.protocol": "SSL", "ssl.ca.pem": PEM},
    {
        "bootstrap.servers": "b:9093",
        "security.protocol": "SSL",
        "ssl.ca.pem": PEM,
        "ssl.certificate.pem": PEM,
        "ssl.key.pem": KEY,
        "ssl.endpoint.identification.algorithm": "none",
    },
    {
        "bootstrap.servers": "b:9094",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "pw",
    },
    {
        "bootstrap.servers": "b:9094",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.jaas.config": "x required;",
    },
    {
        "bootstrap.servers": "b:9094",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "id",
        "sasl.oauthbearer.client.secret": "secret",
        "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
        "sasl.oauthbearer.scope": "kafka",
        "sasl.oauthbearer.extensions": "logicalCluster=lkc-1",
    },
    {
        "bootstrap.servers": "b:9095",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "sasl.kerberos.principal": "alice@EXAMPLE.COM",
        "sasl.kerberos.keytab": KEYTAB,
    },
    {
        "bootstrap.servers": "b-1.c.kafka.eu-west-1.amazonaws.com:9098",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
    },
    {"bootstrap.servers": "b:9092", "error_cb": "logging.getLogger", "group.id": "g"},
    {"bootstrap.servers": "b:9092", "enable.ssl.certificate.verification": "false"},
]


def kafka_keys_read(monkeypatch: pytest.MonkeyPatch, extra: dict[str, str]) -> Read:
    """What reading a `kafka` connection with `extra` asks of it: the hook's client config
    and spec config, the spec's settings (checked, files made portable) and the Java client's
    options made from them."""
    read = Read()
    recording(monkeypatch, read)
    monkeypatch.setenv("AIRFLOW__APACHE_KAFKA__CALLBACK_ALLOWLIST", "logging.getLogger")
    set_connection(monkeypatch, "kafka_read", json.dumps({"conn_type": "kafka", "extra": extra}))

    # The one copy each module makes of the extra (`dict(extra)`) records too.
    monkeypatch.setattr(hook_module, "dict", recording_dict_type(read), raising=False)
    monkeypatch.setattr(security, "dict", recording_dict_type(read), raising=False)
    from airflow_provider_kafkaspark.lifecycle.inputs import with_connection

    hook = hook_module.KafkaSparkHook("kafka_read")
    attempt(hook.kafka_client_config)

    def spec_side() -> None:
        servers, config = hook.kafka_spec_config()
        spec = JobSpec.from_dict(job_spec_dict(bootstrap_servers=servers, checkpoint="/tmp/c"))
        spec = with_connection(spec, servers, RecordingDict(config, read.extras))
        security.java_client_options(RecordingDict(spec.kafka_config, read.extras))

    attempt(spec_side)
    return read


def test_the_kafka_page_lists_every_extra_key_the_code_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fields: set[str] = set()
    keys: set[str] = set()
    for extra in KAFKA_EXTRAS:
        with monkeypatch.context() as patch:
            read = kafka_keys_read(patch, extra)
        fields |= read.fields
        keys |= read.extras
    assert documented("kafka", "Fields") == fields
    assert documented("kafka", "Extra", THIS_PACKAGE) == keys
    assert documented("kafka", "Extra") == keys


def test_the_kafka_page_lists_the_settings_the_java_client_does_not_get() -> None:
    text = section(page("kafka"), "Not passed to Spark's Java client")
    assert set(re.findall(r"^- `([^`]+)`", text, re.M)) == set(security._LIBRDKAFKA_ONLY)


def test_the_kafka_page_s_example_is_read_as_a_client_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    example_connection(monkeypatch, "kafka", "kafka_example")
    config = hook_module.KafkaSparkHook("kafka_example").kafka_client_config()
    assert config["bootstrap.servers"]


# -- spark ----------------------------------------------------------------------------------


def spark_reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, Read]:
    """What each reader asks of a `spark` connection: this package (the master and deploy
    mode, YARN's ResourceManager and Kerberos login, Kubernetes' namespace, the CLI's
    spark-submit binary) and the official SparkSubmitHook a YARN submit builds."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from airflow_provider_kafkaspark.backends.kubernetes import KubernetesBackend
    from airflow_provider_kafkaspark.backends.yarn import YarnBackend
    from airflow_provider_kafkaspark.commands.spark_submit import connection_binary

    example_connection(monkeypatch, "spark", "spark_read")

    def ours() -> None:
        attempt(hook_module.KafkaSparkHook(spark_conn_id="spark_read").spark_connection)
        yarn = YarnBackend("spark_read")
        attempt(yarn.resource_manager)
        attempt(yarn.kerberos_login)
        attempt(KubernetesBackend(spark_conn_id="spark_read").namespace)
        attempt(lambda: connection_binary("spark_read"))

    reads: dict[str, Read] = {}
    for reader, call in (
        (THIS_PACKAGE, ours),
        # As backends/yarn.py builds it: the deploy mode given, the rest from the connection.
        ("SparkSubmitHook", lambda: SparkSubmitHook(conn_id="spark_read", deploy_mode="cluster")),
    ):
        with monkeypatch.context() as patch:
            reads[reader] = read = Read()
            recording(patch, read)
            attempt(call)
    return reads


def test_the_spark_page_lists_what_each_reader_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = spark_reads(monkeypatch)
    for reader, read in reads.items():
        assert documented("spark", "Fields", reader) == read.fields, reader
        assert documented("spark", "Extra", reader) == read.extras, reader
    assert documented("spark", "Extra") == set().union(*(r.extras for r in reads.values()))


# -- aws ------------------------------------------------------------------------------------


def test_the_aws_page_lists_every_field_and_extra_key_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What `aws_storage` (this package's checks, then the Amazon provider's AwsBaseHook and
    its connection wrapper) reads. The wrapper passes the extra on as keyword arguments to
    two methods, whose named parameters are the keys they read."""
    from airflow.providers.amazon.aws.utils.connection_wrapper import AwsConnectionWrapper

    example_connection(monkeypatch, "aws", "aws_read")
    read = Read()
    recording(monkeypatch, read)
    attempt(lambda: hook_module.aws_storage("aws_read"))
    as_keywords = {
        name
        for method in (
            AwsConnectionWrapper._get_credentials,
            AwsConnectionWrapper._get_assume_role_configs,
        )
        for name, p in inspect.signature(method).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert documented("aws", "Fields") == read.fields
    assert documented("aws", "Extra") == read.extras | as_keywords


def test_the_aws_page_s_example_gives_storage_options(monkeypatch: pytest.MonkeyPatch) -> None:
    example_connection(monkeypatch, "aws", "aws_example")
    storage = hook_module.aws_storage("aws_example")
    assert storage.s3fs_options["client_kwargs"]["endpoint_url"]
    assert storage.driver_env["AWS_ACCESS_KEY_ID"]


# -- kubernetes -----------------------------------------------------------------------------


def test_the_kubernetes_page_lists_what_the_kubernetes_hook_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """This package reads no field of a `kubernetes` connection itself: it hands the
    connection to the cncf provider's KubernetesHook for its API client."""
    from airflow_provider_kafkaspark.backends.kubernetes import KubernetesBackend

    # The page's example names a kubeconfig file; this one carries a kubeconfig, so that
    # the hook makes its client (without a cluster: nothing is asked of the API server).
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://k8s.example.com:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    extra = {"kube_config": json.dumps(kubeconfig)}
    set_connection(monkeypatch, "k8s_read", json.dumps({"conn_type": "kubernetes", "extra": extra}))
    read = Read(prefix="extra__kubernetes__")
    recording(monkeypatch, read)
    api = KubernetesBackend(kubernetes_conn_id="k8s_read").api
    assert api.configuration.host  # the example's kubeconfig, read without a cluster
    assert documented("kubernetes", "Fields") == read.fields
    assert documented("kubernetes", "Extra", "KubernetesHook") == read.extras
    assert documented("kubernetes", "Extra") == read.extras
    assert not documented("kubernetes", "Extra", THIS_PACKAGE)


# -- operators, sensors, triggers -----------------------------------------------------------


def public_classes() -> Iterator[tuple[str, type[Any]]]:
    """Every operator, sensor and trigger class of the modules the provider info lists."""
    from airflow.sdk import BaseOperator
    from airflow.triggers.base import BaseTrigger

    info = get_provider_info()
    for kind in ("operators", "sensors", "triggers"):
        for entry in info[kind]:
            for name in entry["python-modules"]:
                module = importlib.import_module(name)
                for attr, value in vars(module).items():
                    if (
                        inspect.isclass(value)
                        and value.__module__ == module.__name__
                        and not attr.startswith("_")
                        and issubclass(value, BaseOperator | BaseTrigger)
                    ):
                        yield f"{name}.{attr}", value


CLASSES = sorted(public_classes())


def documented_params(doc: str) -> list[str]:
    return re.findall(r"^\s*:param (\w+):", doc, re.M)


@pytest.mark.parametrize(("path", "cls"), CLASSES, ids=[p for p, _ in CLASSES])
def test_every_constructor_parameter_is_documented(path: str, cls: type[Any]) -> None:
    params = inspect.signature(cls.__init__).parameters
    named = [
        n
        for n, p in params.items()
        if n != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    doc = inspect.getdoc(cls) or ""
    listed = documented_params(doc)
    missing = [n for n in named if n not in listed]
    assert not missing, f"{path}: constructor parameters without :param in the docstring"
    var_keyword = [n for n, p in params.items() if p.kind is p.VAR_KEYWORD]
    unknown = [n for n in listed if n not in named and n not in var_keyword]
    assert not unknown, f"{path}: :param for what the constructor does not take: {unknown}"
    assert len(listed) == len(set(listed)), f"{path}: a parameter documented twice"


def test_the_reference_pages_render_every_class() -> None:
    rendered = set()
    for name in ("operators.md", "sensors.md", "triggers.md"):
        rendered |= set(re.findall(r"^::: (\S+)$", (REFERENCE / name).read_text(), re.M))
    assert rendered == {path for path, _ in CLASSES}


# -- the CLI page ---------------------------------------------------------------------------


def load_docs_hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "kafkaspark_docs_hooks", ROOT / "scripts" / "docs_hooks.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> Iterator[Any]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*path, name))


def test_the_cli_page_names_every_command_and_flag_with_its_help() -> None:
    text = load_docs_hooks().cli_markdown().replace("\\|", "|")  # a table cell's escape
    parser = build_parser(installed_subcommands())
    for path, sub in commands(parser, ("kafkaspark",)):
        if len(path) > 1:
            assert f"`{' '.join(path)}`\n" in text, f"no heading for {' '.join(path)}"
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            name = action.option_strings[0] if action.option_strings else None
            if name is not None:
                assert f"`{name}" in text, f"{' '.join(path)}: {name} missing"
            if action.help:
                first_words = " ".join(action.help.split()[:3])
                assert first_words.replace("<", "&lt;").replace(">", "&gt;") in text, (
                    f"{' '.join(path)}: the help of {name or action.dest} missing"
                )


def test_the_spec_page_s_generator_names_every_field() -> None:
    text = load_docs_hooks().spec_fields_markdown()
    for f in dataclasses.fields(JobSpec):
        assert f"| `{f.name}` |" in text


# -- the link check -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "level", "judged"),
    [
        # Out of docs/ to a file of the repository: fine.
        ("a link '../README.md', but the target '../README.md' is not", "WARNING", "INFO"),
        (
            "a link '../CONTRIBUTING.md#x', but the target '../CONTRIBUTING.md' is not",
            "WARNING",
            "INFO",
        ),
        # Out of docs/ to nothing, or between pages to nothing: still a warning.
        ("a link '../NOPE.md', but the target '../NOPE.md' is not", "WARNING", "WARNING"),
        ("a link 'nope.md', but the target is not", "WARNING", "WARNING"),
        # A folder MkDocs does not check: a warning only when nothing is there.
        ("an unrecognized relative link '../dags/', it was left as is.", "INFO", "INFO"),
        (
            "an unrecognized relative link '../no-such-folder/', it was left as is.",
            "INFO",
            "WARNING",
        ),
    ],
)
def test_the_link_check_judges_links_against_the_repository(
    message: str, level: str, judged: str
) -> None:
    import logging

    hooks = load_docs_hooks()
    text = f"Doc file 'design.md' contains {message}"
    if "but the target" in text:
        text += " found among documentation files."
    record = logging.LogRecord(
        "mkdocs.structure.pages", getattr(logging, level), "", 0, text, (), None
    )
    assert hooks._LinksOutOfDocs(ROOT / "docs").filter(record)
    assert record.levelname == judged
