"""Files that may hold secrets (a spec with client credentials, an S3 server's keys, Spark or
Hadoop settings with them): readable by their owner only, from the first byte."""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

# Copies this process made (`private_copy`), by name and content digest.
_COPIES: dict[tuple[str, str], Path] = {}


def write_private(path: str | os.PathLike[str], text: str | bytes) -> Path:
    """Write `text` to `path` with mode 0600, also when the file was already there."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # os.open's mode applies only to a file it creates
    with os.fdopen(fd, "wb") as out:
        out.write(text.encode() if isinstance(text, str) else text)
    return Path(path)


def private_copy(content: bytes, name: str) -> Path:
    """A file named `name` holding `content` (a keytab: gssapi and Kafka's clients read one
    from a file only), mode 0600 in a folder only this user reads, removed when this process
    ends; the same file again for the same name and bytes."""
    key = (name, hashlib.sha256(content).hexdigest())
    if key in _COPIES and _COPIES[key].is_file():
        return _COPIES[key]
    folder = tempfile.mkdtemp(prefix="kafkaspark-private-")  # mode 0700
    atexit.register(shutil.rmtree, folder, True)
    _COPIES[key] = write_private(Path(folder) / name, content)
    return _COPIES[key]
