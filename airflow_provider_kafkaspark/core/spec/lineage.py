"""What a job reads and writes, named as OpenLineage datasets: (namespace, name) pairs built
from a job spec, with no OpenLineage import (the Airflow side turns them into the provider's
`Dataset`s, `lineage.py`).

The names follow OpenLineage's dataset naming spec, as the official Airflow providers use it:

    Kafka topic         kafka://{first bootstrap host}:{port}   {topic}
    S3 object or prefix s3://{bucket}                           {key}      (s3a://, s3n:// too)
    HDFS path           hdfs://{namenode host}:{port}           {path}
    local path          file                                    {absolute path}
    another URL         {scheme}://{authority}                  {path}

The Kafka namespace is the first bootstrap server *as configured*: a submit may list the live
servers first for its own clients, but the dataset must keep one name from run to run, and
every server of a cluster names the same topics.
"""

from __future__ import annotations

import posixpath
import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.errors import InvalidArgumentError

KAFKA_DEFAULT_PORT = 9092
# Object stores whose dataset name is the key, without a leading slash.
_OBJECT_STORES = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs"}
# A bootstrap entry may carry a listener name (`SASL_SSL://host:9093`); the namespace does not.
_LISTENER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*://")


@dataclass(frozen=True, order=True)
class DatasetName:
    """One dataset as OpenLineage names it."""

    namespace: str
    name: str


@dataclass(frozen=True)
class JobDatasets:
    """What a job reads and writes. `pattern` is the source's `subscribe_pattern` when it has
    one: its topics are known only by listing the cluster's (`pattern_topics`)."""

    inputs: tuple[DatasetName, ...]
    outputs: tuple[DatasetName, ...]
    pattern: str | None = None


def kafka_namespace(bootstrap_servers: str) -> str:
    """`kafka://host:port` of the first bootstrap server (Kafka's default port when it names
    none)."""
    first = next((s.strip() for s in bootstrap_servers.split(",") if s.strip()), "")
    first = _LISTENER.sub("", first)
    if not first:
        raise InvalidArgumentError("no bootstrap server to name a Kafka dataset by")
    host, _, port = first.rpartition(":")
    if not host or not port.isdigit() or first.endswith("]"):
        # No port: a bare host, or a bracketed IPv6 address alone.
        return f"kafka://{first}:{KAFKA_DEFAULT_PORT}"
    return f"kafka://{host}:{port}"


def kafka_datasets(bootstrap_servers: str, topics: Iterable[str]) -> tuple[DatasetName, ...]:
    namespace = kafka_namespace(bootstrap_servers)
    return tuple(DatasetName(namespace, topic) for topic in sorted(set(topics)))


def path_dataset(path: str) -> DatasetName:
    """A file or folder a job writes (a parquet sink, a backfill's output), by URL or by local
    path (made absolute and normalized: a relative path means the worker's folder)."""
    parts = urllib.parse.urlsplit(path)
    scheme = parts.scheme.lower()
    if scheme in ("", "file") or len(scheme) == 1:  # `C:` is a drive, not a scheme
        local = parts.path if scheme == "file" else path
        return DatasetName("file", _clean(posixpath.abspath(local)))
    store = _OBJECT_STORES.get(scheme)
    if store is not None:
        return DatasetName(f"{store}://{parts.netloc}", _clean(parts.path).lstrip("/") or "/")
    return DatasetName(f"{scheme}://{parts.netloc}", _clean(parts.path) or "/")


def _clean(path: str) -> str:
    """No trailing slash and no `.` or `..` steps: `out/` and `out` are one dataset."""
    if not path:
        return path
    normalized = posixpath.normpath(path)
    return "/" if normalized in ("/", "//") else normalized


def pattern_topics(pattern: str, topics: Iterable[str]) -> list[str]:
    """The topics a `subscribe_pattern` reads among those listed: the whole name must match
    (as Kafka's consumer matches it), Kafka's internal topics (`__consumer_offsets`, ...)
    are never subscribed. A pattern Python cannot compile matches none (Java's regex syntax
    differs in corners)."""
    try:
        compiled = re.compile(pattern)
    except re.error:
        return []
    return sorted(t for t in set(topics) if not t.startswith("__") and compiled.fullmatch(t))


def source_topics(spec: JobSpec) -> tuple[str, ...]:
    """The topics the spec names: its `subscribe` list, or its `assign`'s topics (all of the
    topic is one dataset, whichever partitions are read); none for a pattern."""
    return tuple(sorted({*spec.source.subscribe, *spec.source.assign}))


def sink_datasets(spec: JobSpec) -> tuple[DatasetName, ...]:
    """The topic of a Kafka sink (on the sink's servers), the path of a parquet sink; none
    for the console sink."""
    sink = spec.sink
    if sink.kind.startswith("kafka") and sink.topic:
        return kafka_datasets(spec.sink_bootstrap_servers, [sink.topic])
    if sink.kind == "parquet" and sink.path:
        return (path_dataset(sink.path),)
    return ()


def job_datasets(spec: JobSpec, *, listed_topics: Iterable[str] | None = None) -> JobDatasets:
    """A streaming job's inputs (its source topics; a pattern's among `listed_topics` when the
    cluster's topics were listed) and outputs (its sink's topic or path)."""
    topics = set(source_topics(spec))
    pattern = spec.source.subscribe_pattern
    if pattern and listed_topics is not None:
        topics.update(pattern_topics(pattern, listed_topics))
    return JobDatasets(
        inputs=kafka_datasets(spec.source.bootstrap_servers, topics),
        outputs=sink_datasets(spec),
        pattern=pattern or None,
    )


def backfill_datasets(spec: JobSpec, output: str) -> JobDatasets:
    """A backfill reads the job's source topics and writes `output` (the interval's folder
    once it ran, the output root before)."""
    return JobDatasets(
        inputs=kafka_datasets(spec.source.bootstrap_servers, source_topics(spec)),
        outputs=(path_dataset(output),),
        pattern=spec.source.subscribe_pattern or None,
    )
