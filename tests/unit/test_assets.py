"""The `kafkaspark://` Asset scheme and the provider metadata that registers it."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema  # type: ignore[import-untyped]
import pytest

from airflow_provider_kafkaspark import get_provider_info
from airflow_provider_kafkaspark.assets import sanitize_uri, savepoint_asset


def resolve(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_provider_info_passes_airflows_schema() -> None:
    import airflow

    schema_file = Path(airflow.__file__).parent / "provider_info.schema.json"
    jsonschema.validate(get_provider_info(), json.loads(schema_file.read_text()))


def test_provider_info_lists_every_operator_sensor_trigger_and_hook_module() -> None:
    info = get_provider_info()
    listed = {
        kind: {m for entry in info[kind] for m in entry["python-modules"]}
        for kind in ("operators", "sensors", "triggers", "hooks")
    }
    package = Path(importlib.import_module("airflow_provider_kafkaspark").__file__ or "").parent
    for kind, modules in listed.items():
        on_disk = {
            f"airflow_provider_kafkaspark.{kind}.{p.stem}"
            for p in (package / kind).glob("*.py")
            if p.stem != "__init__"
        }
        assert modules == on_disk, kind
        for module in modules:
            importlib.import_module(module)


def test_the_asset_scheme_resolves_to_its_handler_and_factory() -> None:
    (entry,) = get_provider_info()["asset-uris"]
    assert entry["schemes"] == ["kafkaspark"]
    assert resolve(entry["handler"]) is sanitize_uri
    assert resolve(entry["factory"])(job_name="clicks") == savepoint_asset("clicks")


def test_a_savepoint_uri_passes() -> None:
    uri = urlsplit(savepoint_asset("clicks.v2").uri)
    assert sanitize_uri(uri) == uri


@pytest.mark.parametrize(
    ("uri", "named"),
    [
        ("kafkaspark://checkpoints/clicks", "not host 'checkpoints'"),
        ("kafkaspark://savepoints/", "'' is not a job name"),
        ("kafkaspark://savepoints/a/b", "'a/b' is not a job name"),
        ("kafkaspark://savepoints/.hidden", "'.hidden' is not a job name"),
        ("kafkaspark://savepoints/clicks?x=1", "takes no query"),
    ],
)
def test_a_uri_no_job_could_have_is_rejected(uri: str, named: str) -> None:
    with pytest.raises(ValueError, match=named.replace("?", r"\?").replace(".", r"\.")):
        sanitize_uri(urlsplit(uri))
