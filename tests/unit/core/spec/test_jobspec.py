"""Job spec validation names the field; serialization round-trips and hides secrets."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec, JobSpecError
from airflow_provider_kafkaspark.examples.ip_count import job_spec_dict


def good() -> dict[str, Any]:
    spec = job_spec_dict(bootstrap_servers="127.0.0.1:9092", checkpoint="/tmp/cp")
    spec["kafka_config"] = {"sasl.password": "s3ntinel", "security.protocol": "SASL_PLAINTEXT"}
    return spec


def test_example_spec_is_valid_and_round_trips() -> None:
    spec = JobSpec.from_dict(good())
    assert spec.effective_lag_group == "kafkaspark.ip_count"
    assert JobSpec.from_json(spec.to_json()) == spec
    options = spec.source.spark_options()
    assert options["subscribe"] == "ip_count_source"
    assert options["maxOffsetsPerTrigger"] == "2000"
    assert options["kafka.request.timeout.ms"] == "15000"  # chosen, not the client default
    assert spec.admin_config()["bootstrap.servers"] == "127.0.0.1:9092"


def test_secrets_are_redacted_for_logs() -> None:
    spec = JobSpec.from_dict(good())
    shown = json.dumps(spec.to_dict(redact=True))
    assert "s3ntinel" not in shown and "***" in shown
    assert "SASL_PLAINTEXT" in shown
    assert "s3ntinel" in spec.to_json()  # the driver still gets it


def change(path: str, value: Any) -> dict[str, Any]:
    spec = copy.deepcopy(good())
    node = spec
    *parents, last = path.split(".")
    for key in parents:
        node = node[key]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return spec


DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("job_name", "bad name!", "job_name"),
        ("job_name", 42, "job_name"),
        ("checkpoint_location", DELETE, "checkpoint_location"),
        ("checkpoint_location", "", "checkpoint_location"),
        ("source.subscribe", [], "source.subscribe"),
        ("source.subscribe_pattern", "ip_.*", "source.subscribe"),
        ("source.starting_offsets", "yesterday", "source.starting_offsets"),
        ("source.starting_offsets", '{"t":{"0":"x"}}', "source.starting_offsets"),
        ("source.max_offsets_per_trigger", 0, "source.max_offsets_per_trigger"),
        ("source.max_offsets_per_trigger", "many", "source.max_offsets_per_trigger"),
        ("source.options", {"request.timeout.ms": "1"}, "source.options.request.timeout.ms"),
        ("source.surprise", 1, "source.surprise"),
        ("source.bootstrap_servers", "", "source.bootstrap_servers"),
        ("sink.kind", "s3", "sink.kind"),
        ("sink.topic", None, "sink.topic"),
        ("sink.output_mode", "sometimes", "sink.output_mode"),
        ("sink.transaction_timeout_ms", 5, "sink.transaction_timeout_ms"),
        ("transformation", "not a callable", "transformation"),
        ("trigger_interval", "whenever", "trigger_interval"),
        ("lease_ttl_s", 1, "lease_ttl_s"),
        ("lease_ttl_s", "long", "lease_ttl_s"),
        ("progress_batches", 0, "progress_batches"),
        ("sql", "SELECT 1", "transformation"),
        ("extra", True, "extra"),
    ],
)
def test_bad_fields_are_named(path: str, value: Any, field: str) -> None:
    with pytest.raises(JobSpecError) as err:
        JobSpec.from_dict(change(path, value))
    assert f"job spec field '{field}'" in str(err.value)


def test_parquet_needs_a_path_and_assign_needs_partitions() -> None:
    spec = change("sink", {"kind": "parquet"})
    with pytest.raises(JobSpecError, match=r"'sink\.path'"):
        JobSpec.from_dict(spec)
    spec = change("source.subscribe", DELETE)
    spec["source"]["assign"] = {"t": []}
    with pytest.raises(JobSpecError, match=r"'source\.assign\.t'"):
        JobSpec.from_dict(spec)
    spec["source"]["assign"] = {"t": [0, 2]}
    assert JobSpec.from_dict(spec).source.spark_options()["assign"] == '{"t": [0, 2]}'


def test_files_and_json_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(JobSpecError, match=r"missing\.json: cannot read"):
        JobSpec.load(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(JobSpecError, match=r"broken\.json: not JSON"):
        JobSpec.load(broken)
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(good()))
    assert JobSpec.load(ok).job_name == "ip_count"


def test_lag_group_can_be_renamed_or_disabled() -> None:
    assert JobSpec.from_dict(change("lag_group", "lag.x")).effective_lag_group == "lag.x"
    assert JobSpec.from_dict(change("lag_group", "")).effective_lag_group is None


def test_relative_local_paths_are_made_absolute_for_a_driver_in_another_folder() -> None:
    raw = good()
    raw["checkpoint_location"] = "state/checkpoint"
    raw["sink"] = {"kind": "parquet", "path": "../out"}
    spec = JobSpec.from_dict(raw).with_local_paths_absolute("/srv/airflow/work")
    assert spec.checkpoint_location == "/srv/airflow/work/state/checkpoint"
    assert spec.sink.path == "/srv/airflow/out"


@pytest.mark.parametrize(
    "location", ["/abs/checkpoint", "s3a://bucket/checkpoint", "file:/tmp/checkpoint"]
)
def test_absolute_paths_and_urls_are_kept(location: str) -> None:
    raw = good()
    raw["checkpoint_location"] = location
    spec = JobSpec.from_dict(raw)
    kept = spec.with_local_paths_absolute("/elsewhere")
    assert kept.checkpoint_location == location
    assert kept.sink == spec.sink  # a Kafka sink has no path to change


def test_a_compat_check_spec_round_trips_and_runs_no_standby() -> None:
    spec = JobSpec.from_dict({**good(), "compat_check": True})
    assert spec.compat_check and JobSpec.from_json(spec.to_json()) == spec
    assert not JobSpec.from_dict(good()).compat_check
    with pytest.raises(JobSpecError, match="'compat_check'"):
        JobSpec.from_dict({**good(), "compat_check": True, "standby_token": "tok"})
    with pytest.raises(JobSpecError, match="'compat_check'"):
        JobSpec.from_dict({**good(), "compat_check": "yes"})
