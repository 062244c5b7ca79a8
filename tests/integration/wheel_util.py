"""The runtime wheel as a deployment gets it: built from a copy of the tree, without a
download, and installed into a virtualenv of its own."""

from __future__ import annotations

import email.parser
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build_wheel(tmp_path: Path) -> Path:
    """The provider's wheel, built into `tmp_path` with this environment's setuptools."""
    # Built from a copy: setuptools writes build/ and *.egg-info/ next to the sources.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.cfg", "README.md", "LICENSE", "NOTICE"):
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "airflow_provider_kafkaspark",
        source / "airflow_provider_kafkaspark",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    build = ["wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path)]
    subprocess.run(
        [sys.executable, "-m", "pip", *build, str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("airflow_provider_kafkaspark-*.whl")
    return wheel


def extra_requirements(wheel: Path, extra: str) -> list[str]:
    """The requirements the wheel's METADATA lists for `extra` (`Requires-Dist: x; extra ==
    "driver"`), without their marker: what an install of `wheel[extra]` adds."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.parser.Parser().parsestr(archive.read(name).decode())
    wanted = []
    for requirement in metadata.get_all("Requires-Dist") or []:
        spec, _, marker = requirement.partition(";")
        if marker.replace("'", '"').strip() == f'extra == "{extra}"':
            wanted.append(spec.strip())
    return wanted
