"""Local jars (and pyspark's Python archives) staged once per version next to a YARN staging
folder on a cluster filesystem (`core/cluster/jar_staging.py` says why and decides what); this
module reads the files and talks to the store."""

from __future__ import annotations

import hashlib
import importlib.util
import logging
from pathlib import Path

from airflow_provider_kafkaspark.core.cluster.jar_staging import (
    JarStaging,
    StagedJar,
    cached_jar_url,
    is_local_file,
    jar_entries,
    local_path,
    shared_staging,
)
from airflow_provider_kafkaspark.core.storage.location import Location, open_location
from airflow_provider_kafkaspark.errors import (
    InvalidInputError,
    StorageError,
    StorageUnavailableError,
)

log = logging.getLogger(__name__)


def file_digest(path: Path) -> str:
    """SHA-256 of a file's content (about a second for the 570 MB of the S3A jars)."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def stage_jars(jars: str | None, staging: str | None) -> JarStaging:
    """The jar list spark-submit gets: each local jar replaced by its copy beside `staging`,
    uploaded now unless an earlier submit did. Without a staging folder on a cluster
    filesystem, or without an fsspec filesystem for it here, `jars` as given (spark-submit then
    copies each jar for this application alone, as it always did); so too when the store
    refuses this host or does not answer. A jar that is not there is bad input, named."""
    if staging is None or not shared_staging(staging):
        return JarStaging(jars)
    local = [e for e in jar_entries(jars) if is_local_file(e)]
    if not local:
        return JarStaging(jars)
    try:
        return _stage(jars, staging)
    except (StorageError, StorageUnavailableError) as exc:
        # spark-submit reaches the staging folder with Hadoop's own settings, which may hold
        # credentials this host's Python lacks: it still copies the jars as it always did.
        log.warning("jars not staged once per version (%s): spark-submit copies them", exc)
        return JarStaging(jars)


def _stage(jars: str | None, staging: str) -> JarStaging:
    open_location(staging)
    given: list[str] = []
    uploaded: list[StagedJar] = []
    reused: list[StagedJar] = []
    for entry in jar_entries(jars):
        if not is_local_file(entry):
            given.append(entry)
            continue
        jar = _staged(Path(local_path(entry)), staging)
        target = open_location(jar.url)
        if _has_copy(target, jar.size):
            reused.append(jar)
        else:
            log.info("staging %s (%.1f MB) at %s", jar.path, jar.size / 1e6, jar.url)
            target.fs.put_file(jar.path, target.root)
            uploaded.append(jar)
        given.append(jar.url)
    staged = JarStaging(",".join(given), tuple(uploaded), tuple(reused))
    log.info("%s", staged.describe())
    return staged


def pyspark_archives() -> str | None:
    """pyspark's own Python archives (pyspark.zip, py4j's), which spark-submit ships with
    each Python application unless PYSPARK_ARCHIVES_PATH names them; None without them."""
    found = importlib.util.find_spec("pyspark")
    roots = list(found.submodule_search_locations or []) if found else []
    lib = Path(roots[0], "python", "lib") if roots else None
    if lib is None or not (lib / "pyspark.zip").is_file():
        return None
    return ",".join(str(p) for p in [lib / "pyspark.zip", *sorted(lib.glob("py4j-*-src.zip"))])


def _staged(path: Path, staging: str) -> StagedJar:
    if not path.is_file():
        raise InvalidInputError(f"jar {path}: no such file (in the submit's `jars`)")
    url = cached_jar_url(staging, file_digest(path), path.name)
    return StagedJar(str(path), url, path.stat().st_size)


def _has_copy(target: Location, size: int) -> bool:
    """A complete copy is there: an object store's upload appears whole or not at all, and
    a size that differs (a copy cut short on another filesystem) is written again."""
    try:
        info = target.fs.info(target.root)
    except FileNotFoundError:
        return False
    return int(info.get("size") or -1) == size
