"""Which `spark-submit` a YARN submit from the CLI runs. The official Spark provider's hook
runs its binary by name from PATH (`spark-submit`, or the `spark-binary` extra of the `spark`
connection: one of `SPARK_BINARIES`) and refuses a connection's `spark-home` extra. A person at
a terminal often has Spark without it being on PATH: SPARK_HOME set, or pyspark installed in
the environment that runs this CLI (its wheel ships `bin/spark-submit`). So the CLI looks for
the binary itself and puts its folder first on PATH for the hook; when there is none, it says
in one line where it looked and what to do.

`find_spark_submit` decides from the candidates given (pure but for checking the files);
`spark_binary_of` reads a connection's extra; `connection_binary` and `use_spark_submit` are
the adapters that read the connection, fill the candidates from this process and change its
PATH."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.errors import InvalidInputError

# The binaries the official hook accepts (its ALLOWED_SPARK_BINARIES).
SPARK_BINARIES = ("spark-submit", "spark2-submit", "spark3-submit")
DEFAULT_SPARK_BINARY = "spark-submit"


@dataclass(frozen=True)
class Found:
    path: Path
    source: str  # where it came from, for the log line: "--spark-home", "PATH", ...


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_spark_submit(
    binary: str,
    *,
    spark_home_flag: str | None,
    spark_home_env: str | None,
    path_env: str,
    python_bin: Path,
    pyspark_home: Path | None,
) -> Found:
    """The `binary` to run: in `--spark-home`'s bin if given (only there: a folder named on
    purpose that lacks it is a mistake), else in SPARK_HOME's bin if set (likewise), else on
    PATH, else beside this environment's python (pyspark's wheel installs it there), else in
    the installed pyspark's package folder. Raises `InvalidInputError` naming where it looked
    and what to do."""
    if spark_home_flag:
        return _in_home(binary, spark_home_flag, "--spark-home")
    if spark_home_env:
        return _in_home(binary, spark_home_env, "SPARK_HOME")
    on_path = shutil.which(binary, path=path_env)
    if on_path:
        return Found(Path(on_path), "PATH")
    fallbacks = [(python_bin / binary, f"beside {python_bin / 'python'}")]
    if pyspark_home is not None:
        fallbacks.append((pyspark_home / "bin" / binary, "the installed pyspark"))
    for candidate, source in fallbacks:
        if _executable(candidate):
            return Found(candidate, source)
    looked = ", ".join(["PATH", *(str(c) for c, _ in fallbacks)])
    raise InvalidInputError(
        f"{binary} not found (looked on {looked}): a YARN submit runs it; give --spark-home "
        f"with the cluster's Spark, set SPARK_HOME, put its bin folder on PATH, or install "
        f"pyspark of the cluster's Spark version here"
    )


def _in_home(binary: str, home: str, named_by: str) -> Found:
    candidate = Path(home) / "bin" / binary
    if not _executable(candidate):
        raise InvalidInputError(
            f"{named_by} {home}: no executable bin/{binary} in it; name a Spark installation "
            f"(the folder holding bin/{binary})"
        )
    return Found(candidate, named_by)


def spark_binary_of(conn_id: str, extra: dict[str, Any]) -> str:
    """The binary a `spark` connection's extra names, checked as the official hook checks it,
    but as one line for a person: the hook raises a ValueError from deep inside."""
    if extra.get("spark-home"):
        raise InvalidInputError(
            f"spark connection {conn_id!r}: the official Spark provider refuses its "
            f"`spark-home` extra; remove it and give the folder as --spark-home (or SPARK_HOME)"
        )
    binary = str(extra.get("spark-binary") or DEFAULT_SPARK_BINARY)
    if binary not in SPARK_BINARIES:
        raise InvalidInputError(
            f"spark connection {conn_id!r}: its `spark-binary` extra {binary[:60]!r} is not "
            f"one of {', '.join(SPARK_BINARIES)} (the official Spark provider's choices)"
        )
    return binary


def _pyspark_home() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent


def connection_binary(conn_id: str) -> str:
    """The binary the `spark` connection `conn_id` has the official hook run."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        extra = BaseHook.get_connection(conn_id).extra_dejson
    except AirflowNotFoundException:
        raise InvalidInputError(
            f"spark connection {conn_id!r} is not defined: add it (UI, CLI or an "
            f"AIRFLOW_CONN_{conn_id.upper()} variable)"
        ) from None
    return spark_binary_of(conn_id, extra)


def use_spark_submit(binary: str, spark_home_flag: str | None) -> Found:
    """Find `binary` and put its folder first on this process's PATH, which the official
    hook's spark-submit process inherits."""
    found = find_spark_submit(
        binary,
        spark_home_flag=spark_home_flag,
        spark_home_env=os.environ.get("SPARK_HOME"),
        path_env=os.environ.get("PATH", ""),
        python_bin=Path(sys.executable).parent,
        pyspark_home=_pyspark_home(),
    )
    os.environ["PATH"] = os.pathsep.join([str(found.path.parent), os.environ.get("PATH", "")])
    if spark_home_flag:
        # Spark's launcher scripts use SPARK_HOME when it is set, over their own folder.
        os.environ["SPARK_HOME"] = spark_home_flag
    return found
