#!/usr/bin/env bash
# A driver environment for one more Spark release, idempotently: .venv-spark-<version>/ with
# that release's pyspark, what a driver needs beside it (this package's `driver` extra, and
# this package itself without its Airflow dependencies), and pytest for the test leg of that
# release; plus the release's Kafka connector and S3A jars in .cache/jars/.
#
#   bash scripts/driver_env.sh 3.5.7
#
# The Airflow environment (.venv, scripts/setup.sh) keeps its own pyspark: the official Spark
# provider pulls pyspark-client>=4, which would overwrite a 3.5 pyspark's files.
set -euo pipefail
cd "$(dirname "$0")/.."

version="${1:?usage: scripts/driver_env.sh <spark version, e.g. 3.5.7>}"
PYTHON="${PYTHON:-python3}"
VENV=".venv-spark-$version"
STAMP="$VENV/.kafkaspark-driver-env"

[ -x .venv/bin/python ] || { echo "driver env: run scripts/setup.sh first" >&2; exit 1; }
# The supported releases are those whose connector jars resolve (versions.SPARK_LINES).
.venv/bin/python -c "from airflow_provider_kafkaspark.versions import spark_line; spark_line('$version')"

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"

want="$(cat pyproject.toml devstack/pyproject.toml scripts/driver_env.sh airflow_provider_kafkaspark/versions.py | sha256sum | cut -c1-16)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  echo "driver env: installing pyspark $version and the driver's packages into $VENV"
  # The `driver` extra and the test tools (pytest, the local S3 server), read from
  # pyproject.toml, and the release's own pins (versions.SPARK_LINES): one list each to keep.
  mapfile -t wanted < <(.venv/bin/python - "$version" <<'PY'
import sys, tomllib
from airflow_provider_kafkaspark.versions import spark_line
extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]
print("\n".join(extras["driver"]))
print("\n".join(r for r in extras["dev"] if r.startswith(("pytest", "seaweedfs"))))
print("\n".join(spark_line(sys.argv[1]).driver_pins))
PY
)
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q "pyspark[sql]==$version" "${wanted[@]}"
  # The package without its dependencies: a driver does not import Airflow. The dev stack
  # too (the tests start their servers with it; `kafkaspark local` below is its command).
  # (setuptools warns at length about editable installs: shown only if the install fails.)
  "$VENV/bin/python" -m pip install -q --no-deps -e . -e ./devstack \
    > "$VENV/editable-install.log" 2>&1 || {
    cat "$VENV/editable-install.log" >&2
    exit 1
  }
  echo "$want" > "$STAMP"
fi

"$VENV/bin/python" scripts/check_pyspark.py "$version" | sed 's/^/driver env: /'

.venv/bin/kafkaspark local jars resolve --spark "$version" | sed 's/^/driver env: jars /'
# The class archive of this release's driver JVM (keyed by the pyspark that builds it).
"$VENV/bin/kafkaspark" local jars archive | sed 's/^/driver env: jvm archive /'
