"""The wheel as a team installs it: built from the tree, installed with its `kubernetes` and
`lineage` extras and Airflow 3 into an empty virtualenv, nothing of the source tree on its
path. Airflow then lists the provider (its version from the wheel), loads its plugin (the
Streaming jobs view) and parses the example DAGs, the demo's and the production examples',
without an import error.

Installed as the README says (`wheel_util.airflow_virtualenv`); pyspark then is whole (its
version and its jars), after the Spark provider's pyspark-client wrote over its files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from airflow_provider_kafkaspark import __version__
from airflow_provider_kafkaspark.versions import SPARK_VERSION
from tests.integration.wheel_util import ROOT, airflow_virtualenv

pytestmark = pytest.mark.integration

DAG_FOLDERS = (ROOT / "dags", ROOT / "examples" / "production" / "kubernetes" / "dags")

PYSPARK = """
import pathlib, pyspark
jars = pathlib.Path(pyspark.__file__).parent / "jars"
print(pyspark.__version__, any(jars.glob("spark-core_*.jar")))
"""
PARSE = """
import json, sys
from pathlib import Path
from airflow.dag_processing.dagbag import BundleDagBag

found, errors = [], {}
for folder in map(Path, sys.argv[1:]):
    bag = BundleDagBag(dag_folder=str(folder), bundle_path=folder)
    found += sorted(bag.dags)
    errors.update({k: str(v) for k, v in bag.import_errors.items()})
print(json.dumps({"dags": found, "errors": errors}))
"""


def test_the_wheel_installs_into_an_empty_airflow_and_registers(tmp_path: Path) -> None:
    venv = airflow_virtualenv(tmp_path)
    python, airflow = str(venv / "bin" / "python"), str(venv / "bin" / "airflow")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYTHONPATH"))},
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(tmp_path / "no-dags"),
    }

    def run(*argv: str) -> str:
        # From the virtualenv's folder: nothing of the source tree on the path.
        proc = subprocess.run(argv, cwd=venv, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{argv} failed: {proc.stderr[-3000:]}"
        return proc.stdout

    where = run(python, "-c", "import airflow_provider_kafkaspark as p; print(p.__file__)")
    assert where.startswith(str(venv)), where
    spark = run(python, "-c", PYSPARK).split()
    assert spark == [SPARK_VERSION, "True"], spark
    providers = json.loads(run(airflow, "providers", "list", "--output", "json"))
    ours = [p for p in providers if p["package_name"] == "airflow-provider-kafkaspark"]
    assert [p["version"] for p in ours] == [__version__], providers
    plugins = json.loads(run(airflow, "plugins", "--output", "json"))
    assert "kafkaspark_streaming_jobs" in [p["name"] for p in plugins], plugins
    # The last line: DAG files may print while they are parsed.
    parsed = json.loads(run(python, "-c", PARSE, *map(str, DAG_FOLDERS)).splitlines()[-1])
    assert parsed["errors"] == {}, parsed["errors"]
    assert {"kafkaspark_deploy", "clickstream_deploy", "clickstream_backfill"} <= set(
        parsed["dags"]
    ), parsed["dags"]
