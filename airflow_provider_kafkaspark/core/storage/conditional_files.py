"""Compare-and-set on one small file, for the lease: read it with a version, create it only
if absent, replace or delete it only if unchanged since that version.

Three ways, one interface (`conditional_files(location)` picks one):

- S3 and S3-compatible stores: the store's own preconditions. `If-None-Match: *` on create
  and `If-Match: <etag>` on replace are checked by the server, atomically: of two writers,
  exactly one succeeds. (s3fs passes them through; a delete re-checks the ETag first.)
- Local disk: an exclusive `flock` on a lock file next to the target serialises the check
  and the write (a rename), so the same holds between processes of one host.
- Any other fsspec file system (no precondition to use): write, then read back. Of two
  writers that interleave, both may read back their own write; `guarantee` says so.
"""

from __future__ import annotations

import contextlib
import email.utils
import fcntl
import hashlib
import os
import posixpath
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from airflow_provider_kafkaspark.core.storage.location import Location

COMPARE_AND_SET = "compare-and-set"
READ_BACK = "write then read back (no precondition on this storage)"


@dataclass(frozen=True)
class Versioned:
    data: bytes
    version: str
    # Milliseconds since the file was last written, by the storage's own clock (an object
    # store: the Date of its answer minus the object's LastModified; local disk: this host's
    # clock against the file's mtime), or None where the storage tells no such thing. It
    # compares no writer's clock with the reader's: hosts whose clocks disagree agree on it.
    age_ms: int | None = None


class ConditionalFiles(Protocol):
    guarantee: str

    def read(self, path: str) -> Versioned | None: ...

    def create(self, path: str, data: bytes) -> str | None:
        """Write `data` if nothing is at `path`: the version written, or None if something
        is there."""
        ...

    def replace(self, path: str, data: bytes, version: str) -> str | None:
        """Write `data` if `path` is still at `version`: the version written, or None if it
        changed or vanished. The writer keeps the version it wrote, so that its next replace
        (a lease renewal) is fenced by it: a file rewritten or removed by anyone else since
        is never written over."""
        ...

    def delete(self, path: str, version: str) -> bool:
        """Remove `path` if it is still at `version`; False if it changed."""
        ...


def conditional_files(location: Location) -> ConditionalFiles:
    if location.on_s3:
        return S3ConditionalFiles(location.fs)
    if location.on_local_disk:
        return LocalConditionalFiles()
    return ReadBackFiles(location.fs)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- S3 ---------------------------------------------------------------------------------------


def store_age_ms(head: dict[str, Any]) -> int | None:
    """How long ago the store wrote an object, by the store's clock: its answer's Date header
    minus the object's LastModified (both whole seconds, so within a second or two)."""
    modified = head.get("LastModified")
    date = head.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    if modified is None or not date:
        return None
    try:
        answered = email.utils.parsedate_to_datetime(date)
    except (TypeError, ValueError):
        return None
    return max(0, int((answered - modified).total_seconds() * 1000))


def _precondition_failed(exc: BaseException) -> bool:
    cause = exc.__cause__ or exc.__context__
    code = getattr(cause, "response", {}).get("Error", {}).get("Code")
    # 409: S3's answer to two conditional writes of one key at the same moment.
    return code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


class S3ConditionalFiles:
    guarantee = COMPARE_AND_SET

    def __init__(self, fs: Any) -> None:
        self.fs = fs

    def read(self, path: str) -> Versioned | None:
        # The ETag first, then the body: a write in between makes the body newer than the
        # version, and a replace conditioned on the older version is refused (never the
        # reverse, which would let a decision on old data pass the check).
        self.fs.invalidate_cache(path)
        bucket, key, _ = self.fs.split_path(path)
        try:
            head = self.fs.call_s3("head_object", Bucket=bucket, Key=key)
            data = bytes(self.fs.cat_file(path))
        except FileNotFoundError:
            return None
        return Versioned(data, str(head["ETag"]), store_age_ms(head))

    def create(self, path: str, data: bytes) -> str | None:
        return self._put(path, data, mode="create")

    def replace(self, path: str, data: bytes, version: str) -> str | None:
        return self._put(path, data, IfMatch=version)

    def delete(self, path: str, version: str) -> bool:
        current = self.read(path)
        if current is None or current.version != version:
            return current is None
        bucket, key, _ = self.fs.split_path(path)
        try:
            self.fs.call_s3("delete_object", Bucket=bucket, Key=key, IfMatch=version)
        except OSError as exc:
            if _precondition_failed(exc):
                return False
            raise
        finally:
            self.fs.invalidate_cache(path)
        return True

    def _put(self, path: str, data: bytes, **condition: str) -> str | None:
        try:
            response = self.fs.pipe_file(path, data, **condition)
        except OSError as exc:
            if _precondition_failed(exc):
                return None
            raise
        finally:
            self.fs.invalidate_cache(path)
        etag = response.get("ETag") if isinstance(response, dict) else None
        if etag:
            return str(etag)
        # No ETag in the answer (a store that omits it): the one a read gives now. A writer
        # in between makes this version newer than ours, and our next replace is refused.
        current = self.read(path)
        return current.version if current is not None else None


# -- local disk -------------------------------------------------------------------------------


class LocalConditionalFiles:
    guarantee = COMPARE_AND_SET

    def read(self, path: str) -> Versioned | None:
        try:
            with open(path, "rb") as f:
                data = f.read()
                modified_s = os.fstat(f.fileno()).st_mtime
        except FileNotFoundError:
            return None
        age_ms = max(0, int((time.time() - modified_s) * 1000))
        return Versioned(data, _digest(data), age_ms)

    def create(self, path: str, data: bytes) -> str | None:
        with self._locked(path):
            if os.path.exists(path):
                return None
            self._write(path, data)
        return _digest(data)

    def replace(self, path: str, data: bytes, version: str) -> str | None:
        with self._locked(path):
            current = self.read(path)
            if current is None or current.version != version:
                return None
            self._write(path, data)
        return _digest(data)

    def delete(self, path: str, version: str) -> bool:
        with self._locked(path):
            current = self.read(path)
            if current is None:
                return True
            if current.version != version:
                return False
            os.remove(path)
        return True

    @staticmethod
    @contextlib.contextmanager
    def _locked(path: str) -> Iterator[None]:
        folder, name = os.path.split(path)
        os.makedirs(folder, exist_ok=True)
        fd = os.open(os.path.join(folder, f".{name}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    @staticmethod
    def _write(path: str, data: bytes) -> None:
        # Readers that take no lock see the old file or the new one, never half of one.
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)


# -- anything else ----------------------------------------------------------------------------


class ReadBackFiles:
    guarantee = READ_BACK

    def __init__(self, fs: Any) -> None:
        self.fs = fs

    def read(self, path: str) -> Versioned | None:
        try:
            data = bytes(self.fs.cat_file(path))
        except FileNotFoundError:
            return None
        return Versioned(data, _digest(data))

    def create(self, path: str, data: bytes) -> str | None:
        if self.read(path) is not None:
            return None
        return self._write_and_check(path, data)

    def replace(self, path: str, data: bytes, version: str) -> str | None:
        current = self.read(path)
        if current is None or current.version != version:
            return None
        return self._write_and_check(path, data)

    def delete(self, path: str, version: str) -> bool:
        current = self.read(path)
        if current is None or current.version != version:
            return current is None
        self.fs.rm(path)
        return True

    def _write_and_check(self, path: str, data: bytes) -> str | None:
        parent = posixpath.dirname(path)
        self.fs.makedirs(parent, exist_ok=True)
        tmp = posixpath.join(parent, f".{posixpath.basename(path)}.{uuid.uuid4().hex}.tmp")
        self.fs.pipe_file(tmp, data)
        self.fs.mv(tmp, path)
        written = self.read(path)
        return written.version if written is not None and written.data == data else None
