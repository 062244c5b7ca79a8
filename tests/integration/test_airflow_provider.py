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
