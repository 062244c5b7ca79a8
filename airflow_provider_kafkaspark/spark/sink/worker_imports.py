"""Executor side: keep a Python worker's zip archives from being re-read before every task.

PySpark's worker calls `importlib.invalidate_caches()` before each task it runs (after adding
the task's Python includes to `sys.path`). Up to Python 3.12, that makes every `zipimporter`
re-read its archive's whole directory, in pure Python, at once: one importer per package
imported from a zip, and Spark puts `pyspark.zip`, py4j's zip and spark-core's jar on every
worker's path. Measured on this project's machine (Spark 4.0, Python 3.11): 60 to 100 ms per
task, so 6 sink tasks on 2 cores paid 0.2 to 0.3 s a micro-batch before writing a row.

Python 3.13 made the re-read lazy (it happens at the next import from the archive). Here it
is made conditional instead: an archive is re-read when its size or modification time
changed since it was last read, which is what the re-read exists for (a replaced file).
`make_zip_invalidation_lazy` changes the worker process it runs in, once, for every task
that process runs later (the sink's and any other Python UDF's): those tasks only start
sooner, since an archive that changed is still re-read.
"""

from __future__ import annotations

import os
import sys
import zipimport
from typing import Any

_PATCHED = "_kafkaspark_lazy_invalidation"


def make_zip_invalidation_lazy() -> bool:
    """Make `zipimporter.invalidate_caches` re-read an archive only when it changed; returns
    whether it was changed now (False: Python 3.13 or later, or done before)."""
    if sys.version_info >= (3, 13) or getattr(zipimport.zipimporter, _PATCHED, False):
        return False
    eager = zipimport.zipimporter.invalidate_caches
    directories: dict[str, Any] = zipimport._zip_directory_cache  # type: ignore[attr-defined]
    read_at: dict[str, tuple[int, int]] = {}

    def invalidate_caches(self: zipimport.zipimporter) -> None:
        try:
            stat = os.stat(self.archive)
        except OSError:
            eager(self)  # gone: the eager way forgets it
            read_at.pop(self.archive, None)
            return
        stamp = (stat.st_mtime_ns, stat.st_size)
        if read_at.get(self.archive) == stamp and self.archive in directories:
            self._files = directories[self.archive]  # type: ignore[attr-defined]
            return
        eager(self)
        read_at[self.archive] = stamp

    invalidate_caches.__doc__ = eager.__doc__
    zipimport.zipimporter.invalidate_caches = invalidate_caches  # type: ignore[method-assign]
    setattr(zipimport.zipimporter, _PATCHED, True)
    return True
