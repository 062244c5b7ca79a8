"""The deployment's spec hash: what changes it and what does not."""

from __future__ import annotations

from typing import Any

from airflow_provider_kafkaspark.core.deploy.spec_hash import recorded_spec, spec_hash

SPEC: dict[str, Any] = {
    "job_name": "clicks",
    "source": {"bootstrap_servers": "a:9092", "subscribe": ["in"]},
    "sink": {"kind": "kafka", "topic": "out"},
    "python_path": ["/dags/code"],
    "kafka_config": {"sasl.password": "s3cret"},
    "transformation": "clicks_job:transform",
}
CODE = {"/dags/code": "sha256:code1"}


def h(
    spec: dict[str, Any] = SPEC,
    code: dict[str, str] = CODE,
    module: str | None = None,
    spark: str = "4.0.0",
) -> str:
    return spec_hash(spec, code, module_digest=module, spark_version=spark)


def test_the_hash_is_stable_and_ignores_the_connection() -> None:
    assert h() == h(dict(reversed(list(SPEC.items()))))
    moved = {**SPEC, "source": {**SPEC["source"], "bootstrap_servers": "b:9092"}}
    assert h(moved) == h()
    assert h({**SPEC, "kafka_config": {}}) == h()


def test_code_content_spark_and_the_spec_change_it() -> None:
    assert h(code={"/dags/code": "sha256:code2"}) != h()
    assert h(spark="3.5.7") != h()
    assert h(module="sha256:m") != h()
    assert h({**SPEC, "sink": {"kind": "kafka", "topic": "other"}}) != h()


def test_the_same_code_in_another_folder_is_the_same_spec() -> None:
    elsewhere = {**SPEC, "python_path": ["/other/host/code"]}
    assert h(elsewhere, {"/other/host/code": "sha256:code1"}) == h()


def test_the_recorded_spec_holds_no_client_settings() -> None:
    assert "kafka_config" not in recorded_spec(SPEC)
    assert "s3cret" not in str(recorded_spec(SPEC))
