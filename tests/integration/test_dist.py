"""The release artifacts as `make dist` builds them: scripts/dist.sh into a folder of the test's
own, with this environment's build, twine and setuptools (no download, no new virtualenv;
test_wheel.py and test_wheel_driver.py install a wheel). About 10 s."""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement

import airflow_provider_kafkaspark
from tests.integration.wheel_util import ROOT, extra_requirements

VERSION = airflow_provider_kafkaspark.__version__
PROVIDER = "airflow_provider_kafkaspark"
DEVSTACK = "airflow_provider_kafkaspark_devstack"
DEVSTACK_VERSION = tomllib.loads((ROOT / "devstack" / "pyproject.toml").read_text())["project"][
    "version"
]
ARTIFACTS = [
    f"{PROVIDER}-{VERSION}-py3-none-any.whl",
    f"{PROVIDER}-{VERSION}.tar.gz",
    f"{DEVSTACK}-{DEVSTACK_VERSION}-py3-none-any.whl",
    f"{DEVSTACK}-{DEVSTACK_VERSION}.tar.gz",
]


def run_dist(out: Path, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "dist.sh"), str(out)],
        env={**os.environ, "PYTHON": python},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def canonical(requirements: list[str]) -> set[str]:
    return {str(Requirement(r)) for r in requirements}


@pytest.mark.timeout(180)
def test_make_dist_builds_and_checks_both_distributions(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    # An artifact of an earlier version is replaced, not checked or shipped beside the new one.
    out.mkdir()
    (out / f"{PROVIDER}-0.0.1-py3-none-any.whl").write_bytes(b"old")
    done = run_dist(out)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""

    # One line per artifact: its name and its size in kB.
    assert sorted(p.name for p in out.iterdir()) == sorted(ARTIFACTS)
    lines = done.stdout.splitlines()
    assert len(lines) == len(ARTIFACTS), done.stdout
    for line in lines:
        name, size, unit = line.split()
        assert unit == "kB"
        assert float(size) == pytest.approx((out / name).stat().st_size / 1000, abs=0.05)

    # What the script checked, read again from the artifacts.
    wheel = out / ARTIFACTS[0]
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = f"{PROVIDER}-{VERSION}.dist-info"
    assert {f"{dist_info}/licenses/LICENSE", f"{dist_info}/licenses/NOTICE"} <= set(names)
    assert [n for n in names if n.startswith("tests/") or "kafkaspark_devstack" in n] == []
    entry_points = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    entry_points.read_string(zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode())
    assert entry_points["apache_airflow_provider"]["provider_info"] == (
        "airflow_provider_kafkaspark:get_provider_info"
    )
    assert entry_points.has_option("airflow.plugins", "kafkaspark_streaming_jobs")
    # The license file is the root's, and every extra of pyproject.toml reaches the metadata.
    license_text = zipfile.ZipFile(wheel).read(f"{dist_info}/licenses/LICENSE").decode()
    assert license_text == (ROOT / "LICENSE").read_text()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra, wanted in extras.items():
        assert canonical(extra_requirements(wheel, extra)) == canonical(wanted), extra

    for sdist in (out / ARTIFACTS[1], out / ARTIFACTS[3]):
        top = sdist.name.removesuffix(".tar.gz")
        with tarfile.open(sdist) as archive:
            members = set(archive.getnames())
        assert {f"{top}/LICENSE", f"{top}/NOTICE", f"{top}/PKG-INFO"} <= members
    devstack_names = zipfile.ZipFile(out / ARTIFACTS[2]).namelist()
    assert f"{DEVSTACK}-{DEVSTACK_VERSION}.dist-info/licenses/NOTICE" in devstack_names


def test_a_problem_is_one_line_and_a_failed_exit(tmp_path: Path) -> None:
    # An interpreter without build and twine (one that fails every import).
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexit 1\n")
    python.chmod(0o755)
    done = run_dist(tmp_path / "dist", python=str(python))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("dist: build and twine are missing from ")
    assert not (tmp_path / "dist").exists()
