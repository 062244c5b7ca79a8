"""Checks that this interpreter's pyspark is the release wanted, with its jars (pyspark-client,
which the official Spark provider pulls, writes into pyspark's folder without them).

    .venv/bin/python scripts/check_pyspark.py [VERSION]   # default: versions.SPARK_VERSION

Used by scripts/setup.sh and scripts/driver_env.sh.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyspark

from airflow_provider_kafkaspark.versions import SPARK_VERSION

wanted = sys.argv[1] if len(sys.argv) > 1 else SPARK_VERSION
jars = Path(pyspark.__file__).parent / "jars"
if pyspark.__version__ != wanted:
    sys.exit(f"pyspark {pyspark.__version__} != {wanted} in {sys.prefix}")
if not any(jars.glob("spark-core_*.jar")):
    sys.exit(f"pyspark's jars are missing from {jars}")
print(f"pyspark {pyspark.__version__} with its jars in {sys.prefix}")
