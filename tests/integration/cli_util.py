"""Running the installed `kafkaspark` command as a person would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

KAFKASPARK = str(Path(sys.executable).parent / "kafkaspark")


def cli(
    *args: str, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KAFKASPARK, *args], capture_output=True, text=True, timeout=timeout, check=False, env=env
    )
