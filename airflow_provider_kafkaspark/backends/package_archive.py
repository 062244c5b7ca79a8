"""Code that travels with a job, as zips the driver's and executors' Python import from.

The provider's own package goes as one zip in `--py-files`: a cluster's containers import it
from there (driver and executors alike), so its nodes need only the driver's dependencies
installed, and every submit runs the code of the Airflow host that submitted it.

The job's `python_path` entries go the same way (`ship_python_path`): a path of the submit
host is not there on the driver's node, so each local entry is written into the job's files
under the name `core/spec/job_code.ship_plan` gives it, and the spec names that file instead."""

from __future__ import annotations

import os
import shutil
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import airflow_provider_kafkaspark
from airflow_provider_kafkaspark.core.spec.job_code import (
    EntryKind,
    ShippedEntry,
    ship_plan,
    shipped_spec,
)
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

# Fixed entry times: the same code gives the same bytes (cluster caches key on content).
_EPOCH = (1980, 1, 1, 0, 0, 0)


def tree_members(root: Path, names_from: Path) -> Iterator[tuple[str, Path]]:
    """The files under `root`, named relative to `names_from`, in a fixed order; compiled
    files are left out (the other side's Python compiles for itself)."""
    for path in sorted(root.rglob("*")):
        inside = path.relative_to(root).parts
        if not path.is_file() or "__pycache__" in inside or path.suffix == ".pyc":
            continue
        yield path.relative_to(names_from).as_posix(), path


def write_zip(target: Path, members: Iterable[tuple[str, Path]]) -> Path:
    """A deterministic zip of `members` (name in the archive, file) at `target`."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, path in members:
            entry = zipfile.ZipInfo(name, _EPOCH)
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, path.read_bytes())
    return target


def package_zip(folder: str | Path) -> Path:
    """Zip the installed package (from a wheel or a checkout alike) into `folder`."""
    root = Path(airflow_provider_kafkaspark.__file__).resolve().parent
    return write_zip(Path(folder) / f"{root.name}.zip", tree_members(root, root.parent))


def entry_kind(entry: str) -> EntryKind | None:
    """What a local `python_path` entry is on this host, None when it is not there."""
    if os.path.isdir(entry):
        return "folder"
    if os.path.isfile(entry):
        return "archive" if zipfile.is_zipfile(entry) else "file"
    return None


def ship_python_path(spec: JobSpec, folder: str | Path) -> tuple[JobSpec, list[Path]]:
    """Write the spec's local `python_path` entries into `folder` (a folder zipped with its
    contents at the archive's root, as it sat on sys.path; a lone module zipped; an archive
    copied) and return the spec naming them, with the files written, in the entries' order."""
    plan = ship_plan(spec.python_path, entry_kind)
    return shipped_spec(spec, plan), [_ship(item, Path(folder)) for item in plan]


def _ship(item: ShippedEntry, folder: Path) -> Path:
    target = folder / item.name
    source = Path(item.source)
    if item.how == "copy":
        shutil.copyfile(source, target)
    elif source.is_dir():
        write_zip(target, tree_members(source, source))
    else:
        write_zip(target, [(source.name, source)])
    return target
