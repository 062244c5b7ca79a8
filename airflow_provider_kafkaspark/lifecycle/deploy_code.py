"""The code a deployment's spec names, hashed and kept: a rollback runs the stable spec's code
as it was deployed, even when the files the spec names have been edited since.

Each local `python_path` entry becomes one artifact (a folder zipped deterministically, a
module zipped, an archive as it is), stored once under `_kafkaspark/code/<digest><ext>` of the
job's checkpoint location, the storage every host of the job reaches. A rollback fetches the
stable spec's artifacts into a local folder and submits with them. A transformation module
found outside `python_path` (an installed package) is hashed by its file, not kept: a rollback
runs what is installed then."""

from __future__ import annotations

import hashlib
import importlib.machinery
import logging
import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from airflow_provider_kafkaspark.backends.package_archive import (
    entry_kind,
    tree_members,
    write_zip,
)
from airflow_provider_kafkaspark.core.control.folder import CODE_DIR, CONTROL_DIR
from airflow_provider_kafkaspark.core.spec.job_code import is_local
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.storage.location import Location, open_location

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CodeArtifact:
    entry: str  # the python_path entry, as the spec names it
    digest: str  # sha256 of the artifact's bytes
    name: str  # <digest hex><ext>: its name in the code folder
    path: Path  # the artifact on this host


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def code_artifacts(spec: JobSpec, folder: Path) -> list[CodeArtifact]:
    """One artifact per local `python_path` entry, written into `folder`; URL entries have
    none (they are hashed by their text)."""
    found: list[CodeArtifact] = []
    for i, entry in enumerate(spec.python_path):
        if not is_local(entry):
            continue
        kind = entry_kind(entry)
        source = Path(entry)
        if kind == "archive":
            path, ext = source, source.suffix or ".zip"
        else:
            path = folder / f"entry-{i}.zip"
            members = tree_members(source, source) if kind == "folder" else [(source.name, source)]
            write_zip(path, members)
            ext = ".zip"
        digest = _sha256(path)
        found.append(CodeArtifact(entry, digest, digest.removeprefix("sha256:") + ext, path))
    return found


def module_digest(spec: JobSpec) -> str | None:
    """The digest of the transformation's module file when it is found outside the spec's
    `python_path` (looked up without importing it), else None."""
    if not spec.transformation:
        return None
    module = spec.transformation.split(":", 1)[0]
    locations: list[str] | None = None
    origin: str | None = None
    for part in module.split("."):
        found = importlib.machinery.PathFinder.find_spec(part, locations)
        if found is None:
            return None
        origin = found.origin
        locations = list(found.submodule_search_locations or [])
    if origin is None or not os.path.isfile(origin):
        return None
    if any(is_local(e) and origin.startswith(os.path.abspath(e)) for e in spec.python_path):
        return None
    return _sha256(Path(origin))


def code_folder(checkpoint: str) -> Location:
    return open_location(checkpoint).child(CONTROL_DIR, CODE_DIR)


def stash(checkpoint: str, artifacts: list[CodeArtifact]) -> None:
    """Store each artifact not stored yet (same digest, same bytes: written once)."""
    folder = code_folder(checkpoint)
    for artifact in artifacts:
        if folder.exists(artifact.name):
            continue
        folder.write_atomic(artifact.path.read_bytes(), artifact.name)
        log.info("kept the code of %s as %s", artifact.entry, folder.describe(artifact.name))


def with_stashed_code(checkpoint: str, spec: JobSpec, names: dict[str, str]) -> JobSpec:
    """`spec` with each local entry that `names` maps (entry -> stored name) fetched from the
    code folder into a new local folder; entries it does not map stay as they are."""
    if not names:
        return spec
    folder = code_folder(checkpoint)
    local = Path(tempfile.mkdtemp(prefix="kafkaspark-code-"))
    entries = []
    for entry in spec.python_path:
        name = names.get(entry)
        if name is None:
            entries.append(entry)
            continue
        target = local / name
        with folder.fs.open(folder.path(name), "rb") as fin:
            target.write_bytes(fin.read())
        entries.append(str(target))
    return replace(spec, python_path=tuple(entries))
