"""Files that may hold secrets (a spec with client credentials, an S3 server's keys, Spark or
Hadoop settings with them): readable by their owner only, from the first byte."""

from __future__ import annotations

import os
from pathlib import Path


def write_private(path: str | os.PathLike[str], text: str | bytes) -> Path:
    """Write `text` to `path` with mode 0600, also when the file was already there."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # os.open's mode applies only to a file it creates
    with os.fdopen(fd, "wb") as out:
        out.write(text.encode() if isinstance(text, str) else text)
    return Path(path)
