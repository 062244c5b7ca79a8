"""Storage over fsspec: local paths, `file://`, and whatever fsspec backends are installed
(`s3://` with s3fs, `gs://` with gcsfs, `hdfs://` with pyarrow).

One `Location` is a filesystem plus a root path inside it; every other module speaks in
paths relative to a location, so a checkpoint on S3 and one on a laptop read the same.
"""

from __future__ import annotations

import hashlib
import posixpath
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import fsspec
from fsspec.spec import AbstractFileSystem

from airflow_provider_kafkaspark.errors import StorageError

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Location:
    fs: AbstractFileSystem
    root: str
    url: str

    @property
    def protocols(self) -> frozenset[str]:
        """The file system's protocol names: {"file", "local"}, {"s3", "s3a"}, ..."""
        names = self.fs.protocol
        return frozenset([names] if isinstance(names, str) else names)

    @property
    def on_local_disk(self) -> bool:
        return bool(self.protocols & {"file", "local"})

    @property
    def on_s3(self) -> bool:
        return bool(self.protocols & {"s3", "s3a"})

    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts) if parts else self.root

    def child(self, *parts: str) -> Location:
        sub = posixpath.join(*parts)
        url = self.url.rstrip("/") + "/" + sub
        return Location(self.fs, self.path(sub), url)

    def exists(self, *parts: str) -> bool:
        return bool(self.fs.exists(self.path(*parts)))

    def isdir(self, *parts: str) -> bool:
        return bool(self.fs.isdir(self.path(*parts)))

    def read_text(self, *parts: str) -> str:
        path = self.path(*parts)
        try:
            with self.fs.open(path, "rb") as f:
                data: bytes = f.read()
        except FileNotFoundError as exc:
            raise StorageError(f"{self.describe(*parts)}: file not found") from exc
        except OSError as exc:
            raise StorageError(f"{self.describe(*parts)}: cannot read ({exc})") from exc
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StorageError(f"{self.describe(*parts)}: not UTF-8 text") from exc

    def write_atomic(self, data: str | bytes, *parts: str) -> None:
        """Write so that a reader sees the old file or the new one, never half of one: one PUT
        on S3, elsewhere a temporary file in the same folder renamed over the target."""
        path = self.path(*parts)
        raw = data.encode("utf-8") if isinstance(data, str) else data
        if self.on_s3:
            # One PUT is already all-or-nothing on S3; a rename there would be a copy and a
            # delete, and a crash between them would leave the temporary object behind.
            self.fs.pipe_file(path, raw)
            return
        parent = posixpath.dirname(path)
        self.fs.makedirs(parent, exist_ok=True)
        tmp = posixpath.join(parent, f".{posixpath.basename(path)}.{uuid.uuid4().hex}.tmp")
        with self.fs.open(tmp, "wb") as f:
            f.write(raw)
        try:
            self.fs.mv(tmp, path)
        except Exception:
            self.fs.rm(tmp)
            raise

    def listdir(self, *parts: str) -> list[str]:
        """Names (not paths) in a folder; empty when the folder does not exist."""
        path = self.path(*parts)
        try:
            entries = self.fs.ls(path, detail=False)
        except FileNotFoundError:
            return []
        return sorted(posixpath.basename(str(e).rstrip("/")) for e in entries)

    def walk_files(self, *parts: str) -> Iterator[tuple[str, int]]:
        """(path relative to this location, size) of every file under a folder."""
        base = self.path(*parts)
        if not self.fs.exists(base):
            return
        found: dict[str, dict[str, Any]] = self.fs.find(base, detail=True)
        for full, info in sorted(found.items()):
            if info.get("type") == "directory":
                continue
            yield posixpath.relpath(_strip(full), _strip(self.root)), int(info.get("size") or 0)

    def checksum(self, *parts: str) -> str:
        digest = hashlib.sha256()
        with self.fs.open(self.path(*parts), "rb") as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
        return "sha256:" + digest.hexdigest()

    def describe(self, *parts: str) -> str:
        return self.url.rstrip("/") + ("/" + "/".join(parts) if parts else "")


def _strip(path: str) -> str:
    return path.rstrip("/")


def open_location(url: str) -> Location:
    """A `Location` for a URL or local path; a clear error when no filesystem serves it."""
    if not url or not isinstance(url, str):
        raise StorageError(f"storage URL must be a non-empty string, got {url!r}")
    # Control files are polled by long-lived processes (sensors, the triggerer): a cached S3
    # listing would hide a file another host wrote since.
    options = {"use_listings_cache": False} if url.startswith(("s3://", "s3a://")) else {}
    try:
        fs, root = fsspec.core.url_to_fs(url, **options)
    except (ImportError, ValueError) as exc:
        protocol = url.split("://", 1)[0] if "://" in url else "?"
        raise StorageError(
            f"{url}: no filesystem for '{protocol}://' ({exc}); "
            f"install the fsspec package for it (s3fs, gcsfs, ...)"
        ) from exc
    return Location(fs=fs, root=_strip(str(root)) or "/", url=url)
