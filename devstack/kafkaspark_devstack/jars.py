"""The dev stack's jar cache: the Kafka broker, YARN, and the Spark connector and S3A sets,
resolved from Maven Central with `mvn` (Spark's own `--packages` download is not used: it
does not go through Maven's settings) into a cache folder, by default `.cache/jars` at the
top of the source tree, or `$KAFKASPARK_JARS_DIR`.

Production code reads the jar folder from its setting only (`spark/jars.py`); the dev stack's
launchers, its demo and the tests' conftest set `$KAFKASPARK_JARS_DIR` to this cache when it
is unset (`use_default_jars_dir`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

from airflow_provider_kafkaspark.errors import JarsNotFoundError
from airflow_provider_kafkaspark.spark.jars import JARS_DIR_ENV, connector_bundle, s3a_bundle
from airflow_provider_kafkaspark.versions import (
    KAFKA_BROKER_ARTIFACTS,
    SPARK_LINES,
    SPARK_VERSION,
    YARN_ARTIFACTS,
)

SETUP_HINT = "run `make setup` (or `kafkaspark local jars resolve`)"
_COMPLETE_MARKER = ".complete.json"


# One bundle per folder: name -> (artifacts, resolve transitively?)
BUNDLES: dict[str, tuple[tuple[str, ...], bool]] = {
    "kafka": (KAFKA_BROKER_ARTIFACTS, True),
    "yarn": (YARN_ARTIFACTS, True),
    **{connector_bundle(v): (line.connector_artifacts(), False) for v, line in SPARK_LINES.items()},
    **{s3a_bundle(v): (line.s3a_artifacts(), False) for v, line in SPARK_LINES.items()},
}
# What `make setup` resolves: the broker and this environment's Spark; the others only
# when asked for (`--with yarn`, `--with spark-kafka-3.5.7`).
DEFAULT_BUNDLES = ("kafka", connector_bundle(SPARK_VERSION), s3a_bundle(SPARK_VERSION))


def default_jars_dir() -> Path:
    """`$KAFKASPARK_JARS_DIR`; else `.cache/jars` of the source tree this runs from; else,
    for a package installed from a wheel (no source tree around it), the user's cache
    folder (`$XDG_CACHE_HOME/kafkaspark/jars`, by default `~/.cache/kafkaspark/jars`)."""
    env = os.environ.get(JARS_DIR_ENV)
    if env:
        return Path(env)
    # The source tree's top: devstack/kafkaspark_devstack/jars.py -> ../../..
    top = Path(__file__).resolve().parents[2]
    if (top / "pyproject.toml").is_file():
        return top / ".cache" / "jars"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kafkaspark" / "jars"


def use_default_jars_dir() -> Path:
    """Set `$KAFKASPARK_JARS_DIR` to the dev stack's cache unless it is set: the drivers and
    servers the dev stack starts inherit it, and production code reads nothing else."""
    folder = default_jars_dir()
    os.environ.setdefault(JARS_DIR_ENV, str(folder))
    return Path(os.environ[JARS_DIR_ENV])


def bundle_jars(bundle: str, jars_dir: Path | None = None) -> list[Path]:
    """The jars of one resolved bundle; raises `JarsNotFoundError` naming the folder."""
    folder = (jars_dir or default_jars_dir()) / bundle
    marker = folder / _COMPLETE_MARKER
    if not marker.is_file():
        raise JarsNotFoundError(f"{bundle} jars not found in {folder}: {SETUP_HINT}")
    expected = list(BUNDLES[bundle][0])
    recorded = json.loads(marker.read_text())["artifacts"]
    if recorded != expected:
        raise JarsNotFoundError(
            f"{bundle} jars in {folder} were resolved for {recorded}, "
            f"this package needs {expected}: {SETUP_HINT}"
        )
    jars = sorted(folder.glob("*.jar"))
    if not jars:
        raise JarsNotFoundError(f"{bundle} jars not found in {folder}: {SETUP_HINT}")
    return jars


def kafka_classpath(jars_dir: Path | None = None) -> str:
    return os.pathsep.join(str(j) for j in bundle_jars("kafka", jars_dir))


def _pom(bundle: str, artifacts: tuple[str, ...], transitive: bool) -> str:
    deps = []
    for coordinate in artifacts:
        group, artifact, version = coordinate.split(":")
        exclusions = (
            ""
            if transitive
            else "<exclusions><exclusion><groupId>*</groupId>"
            "<artifactId>*</artifactId></exclusion></exclusions>"
        )
        deps.append(
            f"<dependency><groupId>{escape(group)}</groupId>"
            f"<artifactId>{escape(artifact)}</artifactId>"
            f"<version>{escape(version)}</version>{exclusions}</dependency>"
        )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">'
        "<modelVersion>4.0.0</modelVersion>"
        f"<groupId>kafkaspark.local</groupId><artifactId>{bundle}</artifactId>"
        "<version>0</version><packaging>pom</packaging>"
        f"<dependencies>{''.join(deps)}</dependencies></project>\n"
    )


def yarn_classpath(jars_dir: Path | None = None) -> list[Path]:
    """The jars of a YARN ResourceManager or NodeManager (see `versions.YARN_ARTIFACTS`)."""
    return bundle_jars("yarn", jars_dir)


def resolve_jars(
    jars_dir: Path | None = None,
    *,
    force: bool = False,
    bundles: tuple[str, ...] = DEFAULT_BUNDLES,
) -> dict[str, Path]:
    """Resolve `bundles` with `mvn` into `jars_dir`; a complete bundle is kept as is.

    Each bundle is copied into a temporary folder and renamed into place, so a failed or
    interrupted run never leaves a folder that looks complete.
    """
    root = jars_dir or default_jars_dir()
    mvn = shutil.which("mvn")
    done: dict[str, Path] = {}
    unknown = sorted(set(bundles) - set(BUNDLES))
    if unknown:
        raise ValueError(f"unknown jar bundles {unknown}; known: {', '.join(BUNDLES)}")
    for bundle in bundles:
        artifacts, transitive = BUNDLES[bundle]
        target = root / bundle
        if not force:
            try:
                bundle_jars(bundle, root)
                done[bundle] = target
                continue
            except JarsNotFoundError:
                pass
        if not mvn:
            raise JarsNotFoundError(
                f"{bundle} jars not found in {target} and `mvn` is not on PATH to resolve them"
            )
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=root, prefix=f".{bundle}-") as tmp:
            work = Path(tmp)
            (work / "pom.xml").write_text(_pom(bundle, artifacts, transitive))
            out = work / "jars"
            proc = subprocess.run(
                [
                    mvn,
                    "-q",
                    "-B",
                    "-f",
                    str(work / "pom.xml"),
                    "dependency:copy-dependencies",
                    f"-DoutputDirectory={out}",
                    "-DincludeScope=runtime",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode != 0:
                tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
                raise JarsNotFoundError(f"mvn could not resolve the {bundle} jars:\n{tail}")
            (out / _COMPLETE_MARKER).write_text(json.dumps({"artifacts": list(artifacts)}))
            if target.exists():
                shutil.rmtree(target)
            out.rename(target)
        done[bundle] = target
    return done
