"""How the driver finds the author's code, and the checks a submit can make before it starts.

The driver is a separate process (or a container on a cluster): a module next to the DAG
files is not on its Python path. A job spec's `python_path` lists folders and archives
(.zip, .egg, .whl) to put there; relative entries are resolved against the DAG file's folder
at submit time, so the spec the driver reads holds absolute paths only.

No import of the author's code: a submit looks for the module's file, it does not run it (the
driver does, and reports an import error as a bad job). Kafka is asked only by
`check_topics_exist`, which imports the client inside.
"""

from __future__ import annotations

import dataclasses
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from typing import Any

from airflow_provider_kafkaspark.core.jobspec import JobSpec, JobSpecError
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


def driver_python_path(spec: JobSpec, existing: str | None) -> str | None:
    """PYTHONPATH for a local driver: the spec's local entries first, then `existing`."""
    entries = [e for e in spec.python_path if is_local(e)]
    if existing:
        entries.append(existing)
    return os.pathsep.join(entries) or None


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
    from airflow_provider_kafkaspark.core.kafka_admin import KafkaFacade

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
