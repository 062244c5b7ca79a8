"""Removing a folder of checkpoint storage, all of it and nothing else, on local disk or an
object store, saying (never raising) what could not be removed.

On an object store the folder's objects go first, then its folders, deepest first: a store may
keep listing an emptied folder (SeaweedFS does), which would leave the folder's prefix listed.
Not s3fs's `rm`: its bulk delete drops the store's answer for each key (a key the store
refused stayed, unsaid), and it removes no folder a store keeps once emptied.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

from airflow_provider_kafkaspark.core.storage.location import Location
from airflow_provider_kafkaspark.errors import StorageError

log = logging.getLogger(__name__)

# Bounds of a walk through an object store's listing of a folder (folders, pages per folder):
# a checkpoint copy holds a few dozen folders; a store that answered without end must not
# hold its caller.
MAX_FOLDERS = 10_000
MAX_PAGES = 1_000
# Keys per DeleteObjects request (S3's limit).
DELETE_BATCH = 1_000


def folders_to_remove(root: str, keys: Iterable[str], folders: Iterable[str]) -> list[str]:
    """The folder keys (`a/b/`) of an object store to delete once the objects `keys` under the
    folder `root` (`a/`) are gone: the folders listed, those the keys imply, and `root`
    itself; nothing outside `root`. Deepest first: a store that keeps folders (SeaweedFS)
    removes one only once it is empty."""
    found = {root}
    for key in (*keys, *folders):
        if not key.startswith(root):
            continue
        parts = key[len(root) :].split("/")[:-1]
        found.update(root + "/".join(parts[:depth]) + "/" for depth in range(1, len(parts) + 1))
    return sorted(found, key=lambda folder: (-folder.count("/"), folder))


def remove_tree(target: Location, *, thorough: bool) -> None:
    """Remove the folder `target`, all of it: what cannot be removed is logged, naming its URL.
    `thorough`: on an object store, every folder is listed (see `_store_entries`)."""
    try:
        if target.on_local_disk:
            if os.path.lexists(target.root):
                target.fs.rm(target.root, recursive=True)
        elif target.on_s3:
            _remove_from_store(target, thorough=thorough)
        elif target.exists():
            target.fs.rm(target.path(), recursive=True)
    except Exception as exc:  # noqa: BLE001 - the verdict stands; the next look says what is left
        log.warning(
            "could not remove %s: %s: %s",
            target.url,
            type(exc).__name__,
            exc,
        )


def listed_entries(target: Location) -> list[str] | None:
    """What is listed of the folder `target` (paths relative to it, `.` for its own folder); None
    when it cannot be listed (logged)."""
    try:
        if target.on_local_disk:
            if not os.path.lexists(target.root):
                return []
            inside = (
                os.path.relpath(os.path.join(folder, name), target.root)
                for folder, folders, files in os.walk(target.root)
                for name in (*folders, *files)
            )
            return [".", *sorted(inside)]
        if target.on_s3:
            # One level is enough to tell: a folder is listed while anything is in it.
            bucket, root = _store_root(target)
            _beside, named = _list_store(target, bucket, root.rstrip("/"), "/")
            keys, folders = _list_store(target, bucket, root, "/")
            listed = {e[len(root) :] for e in (*keys, *folders) if e.startswith(root) and e != root}
            return [".", *sorted(listed)] if root in named or listed else []
        left = [rel for rel, _size in target.walk_files()]
        return [".", *left] if target.exists() else left
    except Exception as exc:  # noqa: BLE001 - the verdict stands; said, not raised
        log.warning("could not list %s: %s", target.url, exc)
        return None


def _store_root(location: Location) -> tuple[str, str]:
    """The bucket of an S3 location and its folder's key prefix (`a/b/`)."""
    bucket, _, key = location.root.partition("/")
    return bucket, key.strip("/") + "/"


def _list_store(
    location: Location, bucket: str, prefix: str, delimiter: str
) -> tuple[list[str], list[str]]:
    """The store's listing of `prefix`, page by page: the keys, and with a `delimiter` the
    folders (`a/b/`) one level down (without one, every key at any depth and no folder)."""
    keys: list[str] = []
    folders: list[str] = []
    token: dict[str, str] = {"Delimiter": delimiter} if delimiter else {}
    for _ in range(MAX_PAGES):
        answer = location.fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=prefix, **token)
        keys.extend(str(item["Key"]) for item in answer.get("Contents", []))
        folders.extend(str(item["Prefix"]) for item in answer.get("CommonPrefixes", []))
        if not answer.get("IsTruncated"):
            return keys, folders
        token = {**token, "ContinuationToken": str(answer["NextContinuationToken"])}
    raise StorageError(f"{location.url}: {prefix} listed over {MAX_PAGES} pages")


def _store_entries(location: Location, *, thorough: bool) -> tuple[list[str], list[str]]:
    """The keys under the folder (one listing of objects), and its folders: its own when its
    parent lists it, those its keys imply and, `thorough`, every folder walked one by one (a
    folder that never held an object, which a store may keep, shows in no listing of objects;
    a walk costs a request per folder, so only the removal after a look that found one
    walks)."""
    bucket, root = _store_root(location)
    _beside, named = _list_store(location, bucket, root.rstrip("/"), "/")
    folders = [root] if root in named else []
    keys = [key for key in _list_store(location, bucket, root, "")[0] if key.startswith(root)]
    pending = [root] if thorough else []
    for _ in range(MAX_FOLDERS):
        if not pending:
            return keys, folders
        _found, below = _list_store(location, bucket, pending.pop(), "/")
        for folder in below:
            if folder.startswith(root) and folder not in folders:
                folders.append(folder)
                pending.append(folder)
    raise StorageError(f"{location.url}: more than {MAX_FOLDERS} folders listed")


def _remove_from_store(location: Location, *, thorough: bool) -> None:
    """Remove the folder from an object store: its objects, then its folders, deepest first
    (see the module doc)."""
    bucket, root = _store_root(location)
    keys, folders = _store_entries(location, thorough=thorough)
    if not keys and not folders:
        return
    _delete_keys(location, bucket, root, [key for key in keys if not key.endswith("/")])
    ordered = folders_to_remove(root, keys, folders)
    for depth in sorted({folder.count("/") for folder in ordered}, reverse=True):
        # One request per depth: a folder goes once the ones in it went.
        _delete_keys(location, bucket, root, [f for f in ordered if f.count("/") == depth])


def _delete_keys(location: Location, bucket: str, root: str, keys: list[str]) -> None:
    """Delete `keys` (only those under `root`), DELETE_BATCH a request; what the store
    refuses is logged, naming its URL."""
    mine = [key for key in keys if key.startswith(root)]
    for start in range(0, len(mine), DELETE_BATCH):
        batch = mine[start : start + DELETE_BATCH]
        try:
            answer = location.fs.call_s3(
                "delete_objects",
                Bucket=bucket,
                Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True},
            )
        except Exception as exc:  # noqa: BLE001 - the others are still tried; the look says
            log.warning(
                "could not remove %d entries of %s (first: %s): %s",
                len(batch),
                location.url,
                _key_url(location, root, batch[0]),
                exc,
            )
            continue
        for error in answer.get("Errors", []):
            log.warning(
                "could not remove %s: %s %s",
                _key_url(location, root, str(error.get("Key", ""))),
                error.get("Code", ""),
                error.get("Message", ""),
            )


def _key_url(location: Location, root: str, key: str) -> str:
    rel = key[len(root) :] if key.startswith(root) else key
    return location.describe(rel) if rel else location.url.rstrip("/") + "/"
