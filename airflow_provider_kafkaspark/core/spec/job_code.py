"""How the driver finds the author's code, and the checks a submit can make before it starts.

The driver is a separate process (or a container on a cluster): a module next to the DAG
files is not on its Python path. A job spec's `python_path` lists folders and archives
(.zip, .egg, .whl) to put there; relative entries are resolved against the DAG file's folder
at submit time. A path of the submit host means nothing on the driver's node, so the submit
ships every local entry with the job, as a file of its own name (`ship_plan`: a folder
zipped), and the spec the driver reads names that file (`shipped_spec`); the driver finds it
in its working folder or its SparkFiles folder (`locate_python_path`).

No import of the author's code: a submit looks for the module's file, it does not run it (the
driver does, and reports an import error as a bad job). Kafka is asked only by
`check_topics_exist`, which imports the client inside.
"""

from __future__ import annotations

import dataclasses
import importlib.machinery
import importlib.util
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec, JobSpecError
from airflow_provider_kafkaspark.errors import TopicNotFoundError

_URL = ("://",)


def is_local(entry: str) -> bool:
    return not any(marker in entry for marker in _URL)


def resolve_python_path(spec: JobSpec, base_dir: str | None) -> JobSpec:
    """The spec with relative `python_path` entries made absolute against `base_dir` (the DAG
    file's folder). Without a base, relative entries are an error naming the entry."""
    resolved: list[str] = []
    for i, entry in enumerate(spec.python_path):
        if not is_local(entry) or os.path.isabs(entry):
            resolved.append(entry)
            continue
        if base_dir is None:
            raise JobSpecError(
                f"job spec field 'python_path[{i}]': {entry!r} is relative and there is no "
                f"DAG folder to resolve it against; give an absolute path"
            )
        resolved.append(os.path.normpath(os.path.join(base_dir, entry)))
    return dataclasses.replace(spec, python_path=tuple(resolved))


def resolve_pod_templates(spec: JobSpec, base_dir: str | None) -> JobSpec:
    """The spec with relative pod template files (`spark.kubernetes.driver.podTemplateFile`,
    `spark.kubernetes.executor.podTemplateFile`) made absolute against `base_dir` (the DAG
    file's folder), as `python_path` entries are; the submit reads them there."""
    from airflow_provider_kafkaspark.core.cluster.kubernetes_pod import TEMPLATE_KEYS

    conf = dict(spec.spark_conf)
    for key in TEMPLATE_KEYS:
        entry = str(conf.get(key) or "")
        if not entry or not is_local(entry) or os.path.isabs(entry):
            continue
        if base_dir is None:
            raise JobSpecError(
                f"job spec field 'spark_conf.{key}': {entry!r} is relative and there is no "
                f"DAG folder to resolve it against; give an absolute path"
            )
        conf[key] = os.path.normpath(os.path.join(base_dir, entry))
    return dataclasses.replace(spec, spark_conf=conf)


def check_code_visible(spec: JobSpec, search_path: Sequence[str] | None = None) -> None:
    """Fail fast, naming the field, when a local `python_path` entry does not exist or the
    transformation's top-level module is found neither there nor on `search_path` (default:
    this process's `sys.path`, which the driver's environment shares on the local backend).
    Remote entries (URLs) are not checked here."""
    local = [e for e in spec.python_path if is_local(e)]
    for i, entry in enumerate(spec.python_path):
        if is_local(entry) and not os.path.exists(entry):
            raise JobSpecError(f"job spec field 'python_path[{i}]': {entry} does not exist")
    if not spec.transformation or len(local) != len(spec.python_path):
        return
    module = spec.transformation.split(":", 1)[0]
    top = module.split(".", 1)[0]
    if not _findable(top, local, search_path):
        shown = ", ".join(local) if local else "none"
        raise JobSpecError(
            f"job spec field 'transformation': module {module!r} is not found on the driver's "
            f"Python path (python_path entries: {shown}); put its folder or archive in "
            f"'python_path' (relative entries are resolved against the DAG folder)"
        )


def driver_python_path(
    spec: JobSpec, existing: str | None, base_dir: str | None = None
) -> str | None:
    """PYTHONPATH for a local driver: the spec's local entries first (relative ones, the
    shipped names, joined to `base_dir`, the driver's working folder), then `existing`."""
    entries = [
        os.path.join(base_dir, e) if base_dir and not os.path.isabs(e) else e
        for e in spec.python_path
        if is_local(e)
    ]
    if existing:
        entries.append(existing)
    return os.pathsep.join(entries) or None


EntryKind = Literal["folder", "archive", "file"]

# What Spark's addPyFile puts on an executor's sys.path by the name's end (pyspark's
# SparkContext.PACKAGE_EXTENSIONS); a wheel is a zip too, but only these names are added.
_ARCHIVE_SUFFIXES = (".zip", ".egg", ".jar")
# A shipped name goes into spark-submit's comma-separated --py-files, and YARN reads '#' in a
# resource's name as a rename.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class ShippedEntry:
    """One local `python_path` entry as it travels: `source` on the submit host, written to
    the job's files as `name` (`zip` of a folder or a lone file, or a `copy` of an archive)."""

    index: int
    source: str
    name: str
    how: Literal["zip", "copy"]


def shipped_name(index: int, source: str, kind: EntryKind) -> str:
    """The file name an entry travels under: unique per index (two folders both named `jobs`
    are `python_path_0_jobs.zip` and `python_path_1_jobs.zip`), never the provider's own
    zip's name, and ending as addPyFile needs to put it on the executors' path."""
    base = _UNSAFE.sub("_", os.path.basename(os.path.normpath(source))) or "root"
    if kind == "archive" and base.lower().endswith(_ARCHIVE_SUFFIXES):
        return f"python_path_{index}_{base}"
    return f"python_path_{index}_{base}.zip"


def ship_plan(
    python_path: Sequence[str], kind_of: Callable[[str], EntryKind | None]
) -> tuple[ShippedEntry, ...]:
    """What to ship for each local entry (URLs travel as they are). `kind_of` says what an
    entry is on the submit host, None when it does not exist: a typed error naming it."""
    plan: list[ShippedEntry] = []
    for i, entry in enumerate(python_path):
        if not is_local(entry):
            continue
        kind = kind_of(entry)
        if kind is None:
            raise JobSpecError(
                f"job spec field 'python_path[{i}]': {entry} does not exist on the submit host"
            )
        how: Literal["zip", "copy"] = "copy" if kind == "archive" else "zip"
        plan.append(ShippedEntry(i, entry, shipped_name(i, entry, kind), how))
    return tuple(plan)


def shipped_spec(spec: JobSpec, plan: Sequence[ShippedEntry]) -> JobSpec:
    """The spec the driver reads: each shipped entry replaced by its shipped name."""
    names = {item.index: item.name for item in plan}
    entries = tuple(names.get(i, entry) for i, entry in enumerate(spec.python_path))
    return dataclasses.replace(spec, python_path=entries)


def locate_python_path(
    python_path: Sequence[str], roots: Sequence[str], exists: Callable[[str], bool]
) -> list[str]:
    """Where the driver finds each entry: a shipped name (relative) in the first of `roots`
    (its working folder, where YARN and the local launcher put the job's files, then its
    SparkFiles folder) that has it; a URL as it is; an absolute path only where it exists
    (a spec run by hand). A missing one is a typed error naming the field and the name."""
    found: list[str] = []
    for i, entry in enumerate(python_path):
        if not is_local(entry):
            found.append(entry)
        elif os.path.isabs(entry):
            if not exists(entry):
                raise JobSpecError(
                    f"job spec field 'python_path[{i}]': {entry} does not exist on the "
                    f"driver's host (a submit ships local entries; this spec was not submitted)"
                )
            found.append(entry)
        else:
            hits = [os.path.join(root, entry) for root in roots if root]
            path = next((p for p in hits if exists(p)), None)
            if path is None:
                raise JobSpecError(
                    f"job spec field 'python_path[{i}]': the shipped file {entry!r} is not "
                    f"in the driver's folders ({', '.join(r for r in roots if r)}); it was "
                    f"not shipped with the job"
                )
            found.append(path)
    return found


def _findable(top: str, entries: list[str], search_path: Sequence[str] | None) -> bool:
    if importlib.machinery.PathFinder.find_spec(top, entries) is not None:
        return True
    if search_path is not None:
        return importlib.machinery.PathFinder.find_spec(top, list(search_path)) is not None
    # All of this process's finders (editable installs use their own); a top-level name is
    # looked up without importing it.
    return top in sys.modules or importlib.util.find_spec(top) is not None


def check_topics_exist(spec: JobSpec, kafka_config: dict[str, Any] | None = None) -> None:
    """A source or sink topic that does not exist is a bad job: Spark would wait on a missing
    source topic without a word, and fail the first batch on a missing sink topic."""
    from airflow_provider_kafkaspark.core.kafka.admin import KafkaFacade

    topics = {
        *spec.source.subscribe,
        *spec.source.assign,
        *([spec.sink.topic] if spec.sink.kind.startswith("kafka") and spec.sink.topic else []),
    }
    if not topics:
        return
    sink_elsewhere = spec.sink.bootstrap_servers not in (None, "", spec.source.bootstrap_servers)
    if sink_elsewhere and spec.sink.topic:
        topics.discard(spec.sink.topic)
    with KafkaFacade(kafka_config or spec.admin_config()) as kafka:
        found = kafka.topic_partitions(tuple(sorted(topics)))
    missing = sorted(topics - set(found))
    if missing:
        fields = [
            "sink.topic" if t == spec.sink.topic else "source.subscribe/assign" for t in missing
        ]
        raise TopicNotFoundError(
            f"job spec field '{fields[0]}': topic {missing[0]!r} does not exist on "
            f"{spec.source.bootstrap_servers}"
            + (f" (missing too: {', '.join(missing[1:])})" if len(missing) > 1 else "")
        )
