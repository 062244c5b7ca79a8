"""The README's job spec example is a valid spec, and the README names every field a person
may set, so neither drifts from core/spec/jobspec.py."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec, KafkaSourceSpec, SinkSpec

README = Path(__file__).resolve().parents[2] / "README.md"
MARKER = "<!-- job-spec-example -->"


def example_and_text() -> tuple[str, str]:
    """The JSON block right after the marker, and the paragraph that follows it."""
    text = README.read_text()
    assert text.count(MARKER) == 1, f"README.md: expected one {MARKER}"
    after = text.split(MARKER, 1)[1]
    found = re.match(r"\s*```json\n(.*?)\n```\n(.*?)\n\n", after, re.S)
    assert found, f"README.md: no ```json block right after {MARKER}"
    return found.group(1), found.group(2)


def test_the_readme_example_loads_as_a_job_spec() -> None:
    block, _ = example_and_text()
    spec = JobSpec.from_json(block, where="README.md job spec example")
    assert spec.to_dict()["source"] == {
        **spec.to_dict()["source"],
        **json.loads(block)["source"],
    }
    assert spec.sink.kind == "kafka_exactly_once" and spec.transformation


def test_the_readme_names_every_field() -> None:
    block, text = example_and_text()
    raw = json.loads(block)
    shown = {*raw, *(f"source.{k}" for k in raw["source"]), *(f"sink.{k}" for k in raw["sink"])}
    described = set(re.findall(r"`([a-z_.]+)`", text))
    # A field of the source or sink may be named bare where the sentence says whose it is.
    wanted = {f.name for f in fields(JobSpec)}
    wanted |= {f"source.{f.name}" for f in fields(KafkaSourceSpec)}
    wanted |= {f"sink.{f.name}" for f in fields(SinkSpec)}
    missing = {
        name
        for name in wanted - shown - described
        if name.split(".", 1)[-1] not in described or "." not in name
    }
    assert not missing, f"README.md's job spec section does not name {sorted(missing)}"
