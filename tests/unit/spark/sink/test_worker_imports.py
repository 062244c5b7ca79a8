"""The Python worker's zip archives are re-read before a task only when they changed.

Each case runs in a fresh interpreter: the change is to the process's zipimport, for good."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    sys.version_info >= (3, 13), reason="Python 3.13 re-reads lazily itself: nothing to change"
)

SCRIPT = textwrap.dedent(
    """
    import importlib, sys, zipfile, zipimport
    from airflow_provider_kafkaspark.spark.sink.worker_imports import make_zip_invalidation_lazy

    archive = sys.argv[1]
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("pkg/__init__.py", "")
        z.writestr("pkg/first.py", "WHO = 'first'")
    sys.path.insert(0, archive)
    import pkg.first

    reads = []
    eager_read = zipimport._read_directory
    def counted(path):
        reads.append(path)
        return eager_read(path)
    zipimport._read_directory = counted

    importlib.invalidate_caches()
    eager_reads = len(reads)  # one per importer: the archive and its package
    assert make_zip_invalidation_lazy() is True
    assert make_zip_invalidation_lazy() is False  # once per process
    importlib.invalidate_caches()  # the first one reads, to know what it read
    reads.clear()
    for _ in range(5):
        importlib.invalidate_caches()
    unchanged_reads = len(reads)

    with zipfile.ZipFile(archive, "a") as z:
        z.writestr("pkg/second.py", "WHO = 'second'")
    importlib.invalidate_caches()
    import pkg.second  # only found if the changed archive was read again
    print(eager_reads, unchanged_reads, pkg.second.WHO)
    """
)


def test_an_unchanged_archive_is_not_read_again_and_a_changed_one_is(tmp_path: Path) -> None:
    archive = tmp_path / "code.zip"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(archive)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    eager_reads, unchanged_reads, found = done.stdout.split()
    assert int(eager_reads) >= 2
    assert int(unchanged_reads) == 0
    assert found == "second"
