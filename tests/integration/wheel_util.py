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
# Bounds for a slow machine, not the time an install is expected to take.
INSTALL_TIMEOUT_S = 900


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


def airflow_virtualenv(tmp_path: Path, extras: str = "kubernetes,lineage") -> Path:
    """An empty virtualenv with the wheel (its `extras`) and this environment's Airflow, as
    the README's install section says: the wheel, then pyspark again without its dependencies
    (the Spark provider's pyspark-client writes into pyspark's folder). Airflow's constraints
    file lives on GitHub, out of this machine's reach: the versions this environment resolved
    stand in for it (`pip freeze`, the editable installs left out), which also lets pip take
    every package from its cache. Returns the virtualenv's folder."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    wheel = build_wheel(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.splitlines()
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("\n".join(line for line in frozen if "==" in line) + "\n")
    versions = dict(line.split("==", 1) for line in frozen if "==" in line)
    pip = [python, "-m", "pip", "install", "-q", "--constraint", str(constraints)]
    for argv in (
        [*pip, f"{wheel}[{extras}]", f"apache-airflow=={versions['apache-airflow']}"],
        [*pip, "--no-deps", "--force-reinstall", f"pyspark=={versions['pyspark']}"],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        assert done.returncode == 0, done.stderr[-4000:]
    return venv
