"""Storage over fsspec: local paths, `file://`, and whatever fsspec backends are installed
(`s3://` with s3fs, `gs://` with gcsfs, `hdfs://` with pyarrow).

One `Location` is a filesystem plus a root path inside it; every other module speaks in
paths relative to a location, so a checkpoint on S3 and one on a laptop read the same.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import posixpath
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import fsspec
from fsspec.spec import AbstractFileSystem

from airflow_provider_kafkaspark.errors import (
    StorageAccessError,
    StorageError,
    StorageNotFoundError,
    StorageUnavailableError,
)

_CHUNK = 1 << 20
# Concurrent requests for many small files on an object store, where each file costs a few
# network round trips; local disk copies one file at a time.
_STORE_WORKERS = 8

T = TypeVar("T")
R = TypeVar("R")

# s3fs options (credentials, endpoint, region) for S3 URLs opened in this context: an Airflow
# task or trigger sets them from its `aws` connection, so that two triggers of one triggerer
# with different connections do not share one process-wide setting. Without them s3fs reads
# the standard AWS variables and files, as the CLI does.
_S3_OPTIONS: ContextVar[Mapping[str, Any] | None] = ContextVar("kafkaspark_s3", default=None)


@contextlib.contextmanager
def s3_options_scope(options: Mapping[str, Any] | None) -> Iterator[None]:
    """Open S3 URLs with `options` (s3fs keyword arguments) inside this block."""
    token = _S3_OPTIONS.set(dict(options) if options else None)
    try:
        yield
    finally:
        _S3_OPTIONS.reset(token)


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

    def has_files(self, *parts: str) -> bool:
        """Whether a folder holds any file. Folders alone say nothing on an object store: a
        server may list an emptied folder for a while (SeaweedFS does), and S3A leaves empty
        `folder/` markers."""
        return next(self.walk_files(*parts), None) is not None

    def read_text(self, *parts: str) -> str:
        path = self.path(*parts)
        try:
            # One GET of the whole object: s3fs's file objects ask for the ETag first and read
            # with If-Match, which fails (412) when a writer replaced the file in between, as
            # a driver replaces its lease every heartbeat.
            data = bytes(self.fs.cat_file(path))
        except FileNotFoundError as exc:
            raise StorageNotFoundError(f"{self.describe(*parts)}: file not found") from exc
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

    def _listing(self, *parts: str) -> dict[str, dict[str, Any]]:
        """Every entry under a folder (full path -> fsspec info); empty when it is absent."""
        base = self.path(*parts)
        if not self.fs.exists(base):
            return {}
        found: dict[str, dict[str, Any]] = self.fs.find(base, detail=True)
        return found

    def walk_files(self, *parts: str) -> Iterator[tuple[str, int]]:
        """(path relative to this location, size) of every file under a folder."""
        for full, info in sorted(self._listing(*parts).items()):
            # An empty object named `folder/` is a directory marker (Hadoop's S3A writes
            # them), not a file: copying it as one would make a file named like the folder.
            if info.get("type") == "directory" or _is_marker(full):
                continue
            yield posixpath.relpath(_strip(full), _strip(self.root)), int(info.get("size") or 0)

    def folder_markers(self, *parts: str) -> list[str]:
        """Full paths of the empty `folder/` objects under a folder (Hadoop's S3A writes them;
        local disk has none)."""
        if self.on_local_disk:
            return []
        return sorted(str(full) for full in self._listing(*parts) if _is_marker(full))

    def checksum(self, *parts: str) -> str:
        digest = hashlib.sha256()
        with self.fs.open(self.path(*parts), "rb") as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
        return "sha256:" + digest.hexdigest()

    def map_files(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """`fn` over `items`, results in the items' order: concurrently on an object store,
        one by one on local disk. The first error is raised, as in a loop."""
        if self.on_local_disk:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(_STORE_WORKERS, thread_name_prefix="kafkaspark-io") as pool:
            # Each call in a copy of this context (the storage scope of a task or trigger).
            futures = [pool.submit(contextvars.copy_context().run, fn, i) for i in items]
            return [f.result() for f in futures]

    def describe(self, *parts: str) -> str:
        return self.url.rstrip("/") + ("/" + "/".join(parts) if parts else "")


def _strip(path: str) -> str:
    return path.rstrip("/")


def _is_marker(full: object) -> bool:
    """An object store entry named `folder/`: a directory marker, not a file."""
    return str(full).endswith("/")


def _unreachable(exc: BaseException) -> bool:
    """A connection that failed or timed out, as Python or botocore (without importing it)
    raises it."""
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    return any(
        c.__module__.startswith("botocore") and c.__name__ in ("ConnectionError", "HTTPClientError")
        for c in type(exc).__mro__
    )


def _no_credentials(exc: BaseException) -> bool:
    """botocore's NoCredentialsError (and its kin), without importing botocore."""
    return any(
        c.__module__.startswith("botocore") and c.__name__ == "NoCredentialsError"
        for c in type(exc).__mro__
    )


class _StoreErrors:
    """An object store's file system whose calls raise this package's errors, naming the
    location's URL, where the store refuses access or does not answer (s3fs raises a bare
    `PermissionError: Forbidden` or botocore's own exception types). Everything else passes
    through: attributes, return values and other exceptions, which callers handle."""

    def __init__(self, fs: AbstractFileSystem, url: str) -> None:
        self._fs = fs
        self._url = url

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._fs, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            except PermissionError as exc:
                raise StorageAccessError(
                    f"{self._url}: the store refused access ({exc}); check the credentials "
                    f"(the task's aws connection, or the AWS variables) and the bucket's policy"
                ) from None
            except Exception as exc:
                if _no_credentials(exc):
                    raise StorageAccessError(
                        f"{self._url}: no credentials for the store; give the task an aws "
                        f"connection, or set the AWS variables"
                    ) from None
                if _unreachable(exc):
                    raise StorageUnavailableError(
                        f"{self._url}: the store did not answer ({type(exc).__name__}: {exc})"
                    ) from None
                raise

        return call


def open_location(url: str) -> Location:
    """A `Location` for a URL or local path; a clear error when no filesystem serves it."""
    if not url or not isinstance(url, str):
        raise StorageError(f"storage URL must be a non-empty string, got {url!r}")
    # Control files are polled by long-lived processes (sensors, the triggerer): a cached S3
    # listing would hide a file another host wrote since.
    options: dict[str, Any] = {}
    if url.startswith(("s3://", "s3a://")):
        options = {"use_listings_cache": False, **(_S3_OPTIONS.get() or {})}
    try:
        fs, root = fsspec.core.url_to_fs(url, **options)
    except (ImportError, ValueError) as exc:
        protocol = url.split("://", 1)[0] if "://" in url else "?"
        raise StorageError(
            f"{url}: no filesystem for '{protocol}://' ({exc}); "
            f"install the fsspec package for it (s3fs, gcsfs, ...)"
        ) from exc
    if "file" not in fs.protocol and "local" not in fs.protocol:
        fs = _StoreErrors(fs, url)
    return Location(fs=fs, root=_strip(str(root)) or "/", url=url)
