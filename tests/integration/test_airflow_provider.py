"""Airflow itself (not a mock) finds the provider through its entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import airflow_provider_kafkaspark


def test_airflow_providers_list_shows_the_package(tmp_path: Path) -> None:
    airflow = Path(sys.executable).parent / "airflow"
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path)}
    out = subprocess.run(
        [str(airflow), "providers", "list", "--output", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    providers = {p["package_name"]: p for p in json.loads(out.stdout)}
    assert "airflow-provider-kafkaspark" in providers
    assert (
        providers["airflow-provider-kafkaspark"]["version"]
        == airflow_provider_kafkaspark.__version__
    )
    # The official providers whose connection types we reuse are there too.
    assert "apache-airflow-providers-apache-kafka" in providers
    assert "apache-airflow-providers-apache-spark" in providers


def test_airflow_providers_get_shows_modules_and_the_asset_scheme(tmp_path: Path) -> None:
    airflow = Path(sys.executable).parent / "airflow"
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path)}
    out = subprocess.run(
        [str(airflow), "providers", "get", "airflow-provider-kafkaspark", "--full", "-o", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    (info,) = json.loads(out.stdout)
    assert info["asset-uris"][0]["schemes"] == ["kafkaspark"]
    modules = {m for kind in ("operators", "sensors", "triggers") for m in _modules(info[kind])}
    assert "airflow_provider_kafkaspark.triggers.health" in modules
    assert "airflow_provider_kafkaspark.operators.stop" in modules
    assert {
        "airflow_provider_kafkaspark.sensors.watch",
        "airflow_provider_kafkaspark.triggers.watch",
    } <= modules
    assert info["notifications"] == ["airflow_provider_kafkaspark.notifiers.LogNotifier"]
    # The links of task instances, by class, as the api-server looks them up.
    assert "airflow_provider_kafkaspark.links.YarnApplicationLink" in info["extra-links"]
    # Airflow checks a kafkaspark:// URI with the registered handler when an Asset is made.
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "from airflow.sdk import Asset\nAsset(name='x', uri='kafkaspark://savepoints/a/b')\n",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert check.returncode != 0 and "is not a job name" in check.stderr


def _modules(entries: list[dict[str, object]]) -> list[str]:
    return [str(m) for entry in entries for m in entry["python-modules"]]  # type: ignore[attr-defined]
