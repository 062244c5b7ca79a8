#!/usr/bin/env bash
# Sets up everything on a fresh machine, idempotently:
#   .venv/         Python environment with this package and the dev stack (devstack/, both
#                  editable), Airflow, pyspark, tools
#   .cache/jars/   Kafka broker jars and the Spark Kafka connector, resolved with mvn
# A second run skips what is already complete.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV=".venv"
STAMP="$VENV/.kafkaspark-setup"

command -v java >/dev/null 2>&1 || [ -n "${JAVA_HOME:-}" ] || {
  echo "setup: Java 17+ is needed (Kafka 4 and Spark 4 run on it): install it or set JAVA_HOME" >&2
  exit 1
}
command -v mvn >/dev/null 2>&1 || {
  echo "setup: mvn is needed to resolve the Kafka and Spark jars from Maven Central" >&2
  exit 1
}

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"

want="$(cat pyproject.toml devstack/pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing Python packages into $VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  # The dev stack (`kafkaspark local ...`, the demo) is a distribution of its own.
  "$VENV/bin/python" -m pip install -q -e ".[dev]" -e ./devstack
  # apache-airflow-providers-apache-spark pulls pyspark-client, which writes into the same
  # pyspark/ folder as pyspark; reinstalling pyspark last restores its files (and jars/).
  spark_version="$("$VENV/bin/python" -c 'from airflow_provider_kafkaspark.versions import SPARK_VERSION; print(SPARK_VERSION)')"
  "$VENV/bin/python" -m pip install -q --no-deps --force-reinstall "pyspark==$spark_version"
  echo "$want" > "$STAMP"
fi

"$VENV/bin/python" scripts/check_pyspark.py | sed 's/^/setup: /'

"$VENV/bin/kafkaspark" local jars resolve | sed 's/^/setup: jars /'
"$VENV/bin/weed" version 2>/dev/null | sed 's/^/setup: seaweedfs (local S3 server) /'
# Class archives that halve a local driver's and broker's start (used under KAFKASPARK_FAST_JVM=1).
"$VENV/bin/kafkaspark" local jars archive | sed 's/^/setup: jvm archive /'
