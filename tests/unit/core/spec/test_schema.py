"""The job spec's JSON Schema is the spec's own fields: its properties are the dataclasses'
fields, each described; every example spec of the repository validates against it; and it
refuses and accepts what `JobSpec.from_dict` refuses and accepts at the edges it can say."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from airflow_provider_kafkaspark.cli import main
from airflow_provider_kafkaspark.core.spec.jobspec import (
    DESCRIPTION,
    JobSpec,
    JobSpecError,
    KafkaSourceSpec,
    SinkSpec,
)
from airflow_provider_kafkaspark.core.spec.schema import DIALECT, job_spec_schema
from airflow_provider_kafkaspark.examples.dag_settings import example_settings
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict

ROOT = Path(__file__).resolve().parents[4]
MARKER = "<!-- job-spec-example -->"
FENCED_JSON = re.compile(r"^```json\n(.*?)\n```", re.S | re.M)


def validator() -> jsonschema.protocols.Validator:
    return jsonschema.Draft202012Validator(job_spec_schema())


def schema_errors(raw: Any) -> list[str]:
    return [error.message for error in validator().iter_errors(raw)]


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = job_spec_schema()
    assert schema["$schema"] == DIALECT
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize(
    ("kind", "where"),
    [(JobSpec, None), (KafkaSourceSpec, "KafkaSourceSpec"), (SinkSpec, "SinkSpec")],
)
def test_the_schema_s_properties_are_the_spec_s_fields(kind: type[Any], where: str | None) -> None:
    schema = job_spec_schema()
    node = schema if where is None else schema["$defs"][where]
    spec_fields = dataclasses.fields(kind)
    assert list(node["properties"]) == [f.name for f in spec_fields]
    required = [
        f.name
        for f in spec_fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    assert node["required"] == required
    assert node["additionalProperties"] is False
    for f in spec_fields:
        assert f.metadata.get(DESCRIPTION), f"{kind.__name__}.{f.name} has no description"
        assert node["properties"][f.name]["description"] == f.metadata[DESCRIPTION]


def test_the_schema_s_defaults_are_the_spec_s() -> None:
    minimal = {
        "job_name": "j",
        "source": {"bootstrap_servers": "b:9092", "subscribe": ["t"]},
        "sink": {"kind": "console"},
        "checkpoint_location": "/tmp/c",
    }
    spec = JobSpec.from_dict(minimal).to_dict()
    schema = job_spec_schema()
    for name, prop in schema["properties"].items():
        if "default" in prop:
            assert spec[name] == prop["default"], name
    for part, where in (("source", "KafkaSourceSpec"), ("sink", "SinkSpec")):
        for name, prop in schema["$defs"][where]["properties"].items():
            if "default" in prop and name not in minimal[part]:
                assert spec[part][name] == prop["default"], f"{part}.{name}"


# -- every example spec of the repository ---------------------------------------------------


def _doc_specs() -> list[tuple[str, Any]]:
    """The README's marked example, and every ```json block of README.md and docs/ (pages
    under docs/ at any depth) that is a job spec (an object with a `job_name`)."""
    found: list[tuple[str, Any]] = []
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    pages += sorted((ROOT / "examples").rglob("*.md"))
    marked = 0
    for page in pages:
        text = page.read_text()
        marked += text.count(MARKER)
        for block in FENCED_JSON.finditer(text):
            try:
                raw = json.loads(block.group(1))
            except json.JSONDecodeError:
                continue
            if isinstance(raw, dict) and "job_name" in raw:
                line = text[: block.start()].count("\n") + 1
                found.append((f"{page.relative_to(ROOT)}:{line}", raw))
    assert marked >= 1, f"no {MARKER} block in README.md or docs/"
    return found


def _file_specs() -> list[tuple[str, Any]]:
    """Job spec files of the examples, the example DAGs and the tests (a .json file that is
    an object with a `job_name`)."""
    found: list[tuple[str, Any]] = []
    for folder in ("examples", "dags", "tests"):
        for path in sorted((ROOT / folder).rglob("*.json")):
            try:
                raw = json.loads(path.read_text())
            except (UnicodeDecodeError, json.JSONDecodeError):
                continue
            if isinstance(raw, dict) and "job_name" in raw:
                found.append((str(path.relative_to(ROOT)), raw))
    return found


def _code_specs() -> list[tuple[str, Any]]:
    """The specs the examples, the example DAGs and the demo submit."""
    settings = example_settings()
    upgraded = dataclasses.replace(
        settings, upgrade_transformation="jobs.v2:transform", upgrade_python_path=("jobs",)
    )
    with_conf = dataclasses.replace(settings, spark_conf={"spark.sql.shuffle.partitions": "2"})
    specs: list[tuple[str, Any]] = [
        ("dag_settings.job_spec", settings.job_spec()),
        ("dag_settings.job_spec with KAFKASPARK_SPARK_CONF", with_conf.job_spec()),
        ("dag_settings.upgraded_job_spec", upgraded.upgraded_job_spec()),
    ]
    for kind in ("kafka_exactly_once", "kafka", "console"):
        specs.append(
            (
                f"ip_count.job_spec_dict({kind})",
                job_spec_dict(bootstrap_servers="b:9092", checkpoint="/tmp/c", sink_kind=kind),
            )
        )
    specs.append(
        (
            "ip_count.job_spec_dict(availableNow, no limit)",
            job_spec_dict(
                bootstrap_servers="b:9092",
                checkpoint="s3://b/c",
                trigger_interval="availableNow",
                max_offsets_per_trigger=None,
            ),
        )
    )
    return specs


def _written_specs() -> list[tuple[str, Any]]:
    """Specs as a submit writes them for a driver (`to_json`: every field, secrets named in
    `secret_env`), a standby's and a compatibility check's included."""
    spec = JobSpec.from_dict(job_spec_dict(bootstrap_servers="b:9092", checkpoint="/tmp/c"))
    standby = dataclasses.replace(spec, standby_token="tok-1", standby_timeout_s=60.0)
    check = dataclasses.replace(spec, compat_check=True, spark_version="3.5.7")
    secret = dataclasses.replace(
        spec,
        kafka_config={"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"},
        secret_env={"kafka_config.sasl.password": "KAFKASPARK_SECRET_KAFKA_0"},
    )
    return [
        (name, json.loads(s.to_json()))
        for name, s in (
            ("written", spec),
            ("written standby", standby),
            ("written compat check", check),
            ("written with secret_env", secret),
        )
    ]


EXAMPLES = [*_doc_specs(), *_file_specs(), *_code_specs(), *_written_specs()]


@pytest.mark.parametrize(("where", "raw"), EXAMPLES, ids=[w for w, _ in EXAMPLES])
def test_every_example_spec_validates_against_the_schema(where: str, raw: Any) -> None:
    assert schema_errors(raw) == [], where
    JobSpec.from_dict(copy.deepcopy(raw))  # and the spec's own check agrees


# -- the schema and the spec's own check agree at the edges --------------------------------


def _base() -> dict[str, Any]:
    return job_spec_dict(bootstrap_servers="b:9092", checkpoint="/tmp/c")


def _with(path: str, value: Any) -> dict[str, Any]:
    raw = _base()
    node = raw
    *parents, last = path.split(".")
    for part in parents:
        node = node[part]
    node[last] = value
    return raw


REFUSED = [
    ("unknown field", "colour", "blue"),
    ("unknown source field", "source.topic", "t"),
    ("unknown sink field", "sink.format", "json"),
    ("job name with a slash", "job_name", "a/b"),
    ("job name with a leading dot", "job_name", ".a"),
    ("sink kind", "sink.kind", "csv"),
    ("output mode", "sink.output_mode", "overwrite"),
    ("sink id", "sink.sink_id", "a b"),
    ("transaction timeout", "sink.transaction_timeout_ms", 999),
    ("lease ttl", "lease_ttl_s", 2.5),
    ("drain timeout", "drain_timeout_s", 0),
    ("standby timeout", "standby_timeout_s", -1),
    ("progress batches low", "progress_batches", 0),
    ("progress batches high", "progress_batches", 1001),
    ("progress batches as a number", "progress_batches", 2.5),
    ("max offsets", "source.max_offsets_per_trigger", 0),
    ("max offsets as a boolean", "source.max_offsets_per_trigger", True),
    ("spark version", "spark_version", "9.9.9"),
    ("trigger interval", "trigger_interval", "soon"),
    ("transformation", "transformation", "module.function"),
    ("source option", "source.options", {"request.timeout.ms": "1"}),
    ("secret variable", "secret_env", {"kafka_config.sasl.password": "PASSWORD"}),
    ("negative partition", "source.assign", {"t": [-1]}),
    ("no partitions", "source.assign", {"t": []}),
    ("topic with a comma", "source.subscribe", ["a,b"]),
    ("empty topic", "source.subscribe", [""]),
    ("subscribe as a number", "source.subscribe", 3),
    ("blank python_path entry", "python_path", [" "]),
    ("fail_on_data_loss as a string", "source.fail_on_data_loss", "true"),
    ("compat_check as a number", "compat_check", 1),
    ("empty bootstrap servers", "source.bootstrap_servers", ""),
    ("empty checkpoint", "checkpoint_location", ""),
]


@pytest.mark.parametrize(("what", "path", "value"), REFUSED, ids=[r[0] for r in REFUSED])
def test_what_the_spec_refuses_the_schema_refuses(what: str, path: str, value: Any) -> None:
    raw = _with(path, value)
    assert schema_errors(raw), f"the schema accepts {what}"
    with pytest.raises(JobSpecError):
        JobSpec.from_dict(raw)


ACCEPTED = [
    ("lease ttl at its minimum", "lease_ttl_s", 3),
    ("progress batches at its maximum", "progress_batches", 1000),
    ("transaction timeout at its minimum", "sink.transaction_timeout_ms", 1000),
    ("one topic as a string", "source.subscribe", "t"),
    ("one python_path entry as a string", "python_path", "jobs"),
    ("a Spark source option", "source.options", {"minPartitions": "4"}),
    ("a Kafka client option", "source.options", {"kafka.client.id": "x"}),
    ("trigger availableNow", "trigger_interval", "availableNow"),
    ("trigger in ms", "trigger_interval", "500 ms"),
    ("a supported Spark", "spark_version", "3.5.7"),
    ("no lag commits", "lag_group", ""),
    ("whole seconds as an integer", "drain_timeout_s", 60),
]


@pytest.mark.parametrize(("what", "path", "value"), ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_what_the_spec_accepts_the_schema_accepts(what: str, path: str, value: Any) -> None:
    raw = _with(path, value)
    assert schema_errors(raw) == [], what
    JobSpec.from_dict(raw)


# -- the CLI --------------------------------------------------------------------------------


def test_spec_schema_prints_the_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["spec", "schema"]) == 0
    assert json.loads(capsys.readouterr().out) == job_spec_schema()
    out = tmp_path / "job-spec.schema.json"
    assert main(["spec", "schema", "--output", str(out)]) == 0
    assert json.loads(out.read_text()) == job_spec_schema()


def test_spec_validate_names_the_file_and_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_base()))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_with("sink.kind", "csv")))
    assert main(["spec", "validate", str(good)]) == 0
    assert "valid (job ip_count)" in capsys.readouterr().out
    assert main(["spec", "validate", str(good), str(bad), "--json"]) == 2
    results = json.loads(capsys.readouterr().out)
    assert [r["valid"] for r in results] == [True, False]
    assert "'sink.kind'" in results[1]["error"]
    missing = tmp_path / "missing.json"
    assert main(["spec", "validate", str(missing)]) == 2
    assert f"{missing}: cannot read the job spec" in capsys.readouterr().out
