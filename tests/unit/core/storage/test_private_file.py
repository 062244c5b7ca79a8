"""Files that may hold secrets are their owner's alone, also when they were there before."""

from __future__ import annotations

import stat
from pathlib import Path

from airflow_provider_kafkaspark.core.storage.private_file import write_private


def test_a_new_and_an_existing_file_end_up_0600(tmp_path: Path) -> None:
    fresh = write_private(tmp_path / "new.conf", "secret=1\n")
    old = tmp_path / "old.conf"
    old.write_text("x")
    old.chmod(0o644)
    write_private(old, "secret=2\n")
    for path, text in ((fresh, "secret=1\n"), (old, "secret=2\n")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.read_text() == text
