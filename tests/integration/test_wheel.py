"""The runtime wheel: what a deployment installs holds the provider and not the dev stack
(launchers, the demo), and every module in it imports without it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

IMPORT_ALL = """
import importlib, pathlib, sys
top = pathlib.Path(sys.argv[1])
sys.path.insert(0, str(top))  # ahead of the editable install's finder
failed = []
for path in sorted((top / "airflow_provider_kafkaspark").rglob("*.py")):
    name = ".".join(path.relative_to(top).with_suffix("").parts).removesuffix(".__init__")
    try:
        module = importlib.import_module(name)
        assert str(top) in str(module.__file__), f"{name} came from {module.__file__}"
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print("\\n".join(failed))
devstack = sorted(m for m in sys.modules if m.startswith("kafkaspark_devstack"))
print(f"dev stack loaded: {devstack}" if devstack else "", end="")
print("ok")
"""


def test_the_wheel_holds_the_provider_without_the_dev_stack(tmp_path: Path) -> None:
    # Built from a copy: setuptools writes build/ and *.egg-info/ next to the sources.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.cfg", "README.md", "LICENSE"):
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
    names = zipfile.ZipFile(wheel).namelist()
    for runtime in ("spark/runner.py", "spark/sink/fault_points.py", "hooks/kafkaspark.py"):
        assert f"airflow_provider_kafkaspark/{runtime}" in names
    assert [n for n in names if n.startswith("tests/")] == []
    # The dev stack is a distribution of its own (devstack/): no launcher ships here.
    launchers = ("kafkaspark_devstack", "netbed", "postgres", "airflow_services", "/local/")
    assert [n for n in names if any(part in n for part in launchers)] == []

    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL, str(unpacked)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout.strip()
    assert out == "ok", out
