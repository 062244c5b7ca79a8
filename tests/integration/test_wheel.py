"""The runtime wheel: what a deployment installs holds the provider and not the dev stack
(launchers, the demo), and every module in it imports without it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.integration.wheel_util import build_wheel

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
    wheel = build_wheel(tmp_path)
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
