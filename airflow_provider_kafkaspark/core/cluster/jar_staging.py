"""Where a YARN submit's jars come from, decided without I/O.

spark-submit copies every jar it is given as a local path into the application's staging
folder, and each NodeManager then localizes that copy for the application alone: with the
S3A jars (the AWS SDK bundle alone is over 500 MB) every submit moved half a gigabyte. Spark
copies nothing when a jar is already on the staging folder's filesystem, and a NodeManager
keeps a world-readable file of a shared filesystem in its public cache for every later
application. So a local jar (and pyspark's own Python archives, which spark-submit ships
with every Python application) is uploaded once, under a folder named by its content's digest
next to the staging folder's applications, and later submits name that copy. A `local:` jar
(installed on every node) and one already on a cluster filesystem are left as they are.

A copy is never replaced once written: YARN refuses to localize a file whose modification
time changed since the submit, so replacing a copy would fail the applications that use it.
The digest in its path makes a new jar a new file instead.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

STAGING_DIR_KEY = "spark.yarn.stagingDir"
CACHE_FOLDER = "kafkaspark-jars"
# The digest's length in the folder name: 64 bits of SHA-256 tell versions apart.
DIGEST_CHARS = 16
_LOCAL_SCHEMES = ("", "file")
_PROPERTY = re.compile(r"^\s*([^\s=:]+)\s*[\s=:]\s*(.*?)\s*$")


def parse_properties(text: str) -> dict[str, str]:
    """The `key value` (or `key=value`) lines of a spark-defaults.conf, comments left out."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith(("#", "!")):
            continue
        match = _PROPERTY.match(line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def staging_dir(conf: Mapping[str, str], defaults_text: str) -> str | None:
    """The staging folder spark-submit will use: the submit's conf first, as Spark reads it,
    then the client's spark-defaults.conf; None when neither names one (Spark then stages in
    the user's home folder on the cluster's default filesystem, which this host cannot see)."""
    found = conf.get(STAGING_DIR_KEY) or parse_properties(defaults_text).get(STAGING_DIR_KEY)
    return (found or "").strip() or None


def scheme_of(entry: str) -> str:
    """`s3a` for `s3a://b/k`, `local` for `local:/p`, '' for a plain path."""
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", entry)
    # A Windows drive letter is no scheme; nor is anything on this POSIX-only path.
    return match.group(1).lower() if match and len(match.group(1)) > 1 else ""


def is_local_file(entry: str) -> bool:
    """A jar spark-submit would read from this host's disk (and so copy)."""
    return scheme_of(entry) in _LOCAL_SCHEMES


def local_path(entry: str) -> str:
    """The path of a local jar entry (`file:///p` or `/p`)."""
    return entry[len("file://") :] if entry.startswith("file://") else entry


def shared_staging(staging: str | None) -> bool:
    """Whether a staging folder is on a cluster filesystem (S3, HDFS, ...), where a jar
    staged once serves every submit; a `file:` one is this host's disk."""
    return staging is not None and scheme_of(staging) not in _LOCAL_SCHEMES


def jar_entries(jars: str | None) -> list[str]:
    """The entries of a comma-separated jar list."""
    return [j.strip() for j in (jars or "").split(",") if j.strip()]


def cached_jar_url(staging: str, digest: str, name: str) -> str:
    """Where the staged copy of a jar with content `digest` lives."""
    return posixpath.join(staging.rstrip("/"), CACHE_FOLDER, digest[:DIGEST_CHARS], name)


@dataclass(frozen=True)
class StagedJar:
    """One local jar and the URL of its staged copy."""

    path: str
    url: str
    size: int


@dataclass(frozen=True)
class JarStaging:
    """What a submit does with its jars: `jars` is what spark-submit is given; `uploaded`
    the copies this submit wrote, `reused` the ones an earlier submit had."""

    jars: str | None
    uploaded: tuple[StagedJar, ...] = ()
    reused: tuple[StagedJar, ...] = ()

    @property
    def staged(self) -> bool:
        """Whether any file is named by its staged copy."""
        return bool(self.uploaded or self.reused)

    @property
    def uploaded_bytes(self) -> int:
        return sum(j.size for j in self.uploaded)

    def describe(self) -> str:
        def mb(items: tuple[StagedJar, ...]) -> str:
            return f"{sum(j.size for j in items) / 1e6:.1f} MB"

        return (
            f"jars staged once per version: {len(self.reused)} reused ({mb(self.reused)}), "
            f"{len(self.uploaded)} uploaded ({mb(self.uploaded)})"
        )
