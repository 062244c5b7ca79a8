"""A job's `python_path` travels with the job: the submit host's paths become the names of
files shipped with it, and the driver finds them by those names in its own folders."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from airflow_provider_kafkaspark.backends.package_archive import entry_kind, ship_python_path
from airflow_provider_kafkaspark.core.spec.job_code import (
    EntryKind,
    ShippedEntry,
    locate_python_path,
    ship_plan,
    shipped_name,
    shipped_spec,
)
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec, JobSpecError


def spec(python_path: list[str]) -> JobSpec:
    return JobSpec.from_dict(
        {
            "job_name": "j",
            "source": {"bootstrap_servers": "k:9092", "subscribe": ["t"]},
            "checkpoint_location": "/cp",
            "sink": {"kind": "console"},
            "python_path": python_path,
        }
    )


KINDS: dict[str, EntryKind] = {
    "/dags/a/jobs": "folder",
    "/dags/b/jobs": "folder",
    "/dags/jobs.zip": "archive",
    "/dags/lib.whl": "archive",
    "/dags/one.py": "file",
    "/dags/we,ird#name": "folder",
}


def test_entries_get_unique_shipped_names_and_urls_stay() -> None:
    entries = [*KINDS, "s3://bucket/code.zip"]
    plan = ship_plan(entries, KINDS.get)
    names = [item.name for item in plan]
    assert names == [
        "python_path_0_jobs.zip",  # two folders both named `jobs`: two files
        "python_path_1_jobs.zip",
        "python_path_2_jobs.zip",
        "python_path_3_lib.whl.zip",  # addPyFile puts only .zip/.egg/.jar on the path
        "python_path_4_one.py.zip",
        "python_path_5_we_ird_name.zip",  # --py-files is comma-separated, '#' renames
    ]
    assert len(set(names)) == len(names)
    assert [item.how for item in plan] == ["zip", "zip", "copy", "copy", "zip", "zip"]
    assert "airflow_provider_kafkaspark.zip" not in names
    shipped = shipped_spec(spec(entries), plan)
    assert shipped.python_path == (*names, "s3://bucket/code.zip")
    assert not any(p.startswith("/") for p in shipped.python_path)


def test_a_missing_entry_at_submit_names_the_field() -> None:
    with pytest.raises(JobSpecError, match=r"'python_path\[1\]': /gone does not exist") as err:
        ship_plan(["/dags/a/jobs", "/gone"], KINDS.get)
    assert "\n" not in str(err.value)


def test_a_trailing_slash_and_the_root_still_name_a_file() -> None:
    assert shipped_name(0, "/dags/jobs/", "folder") == "python_path_0_jobs.zip"
    assert shipped_name(1, "/", "folder") == "python_path_1_root.zip"
    assert shipped_name(2, "x.EGG", "archive") == "python_path_2_x.EGG"


def test_the_driver_finds_shipped_names_in_its_folders() -> None:
    present = {"/work/python_path_0_jobs.zip", "/files/python_path_1_lib.zip", "/opt/code"}
    roots = ["/work", "/files"]
    found = locate_python_path(
        ["python_path_0_jobs.zip", "python_path_1_lib.zip", "/opt/code", "s3://b/c.zip"],
        roots,
        present.__contains__,
    )
    assert found == [
        "/work/python_path_0_jobs.zip",
        "/files/python_path_1_lib.zip",
        "/opt/code",
        "s3://b/c.zip",
    ]


def test_a_name_not_shipped_is_a_typed_error_naming_field_and_name() -> None:
    with pytest.raises(JobSpecError) as err:
        locate_python_path(["python_path_0_jobs.zip"], ["/work", "/files"], lambda _: False)
    message = str(err.value)
    assert "'python_path[0]'" in message and "'python_path_0_jobs.zip'" in message
    assert "/work" in message and "not shipped" in message and "\n" not in message
    with pytest.raises(JobSpecError, match=r"'python_path\[0\]': /submit/host/jobs does not"):
        locate_python_path(["/submit/host/jobs"], ["/work"], lambda _: False)


def test_shipping_writes_importable_deterministic_files(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "jobs", tmp_path / "b" / "jobs"
    for folder, value in ((first, 1), (second, 2)):
        (folder / "pkg" / "__pycache__").mkdir(parents=True)
        (folder / "pkg" / "__init__.py").write_text("")
        (folder / "pkg" / "__pycache__" / "m.cpython-312.pyc").write_bytes(b"x")
        (folder / f"mod{value}.py").write_text(f"VALUE = {value}\n")
    single = tmp_path / "single.py"
    single.write_text("VALUE = 3\n")
    archive = tmp_path / "lib.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("libmod.py", "VALUE = 4\n")
    assert entry_kind(str(archive)) == "archive" and entry_kind(str(single)) == "file"
    out = tmp_path / "ship"
    out.mkdir()
    given = spec([str(first), str(second), str(single), str(archive)])
    shipped, files = ship_python_path(given, out)
    assert [f.name for f in files] == list(shipped.python_path)
    assert zipfile.ZipFile(files[0]).namelist() == ["mod1.py", "pkg/__init__.py"]
    probe = "import mod1, mod2, single, libmod; print(mod1.VALUE + mod2.VALUE + single.VALUE)"
    path = ", ".join(repr(str(f)) for f in files)
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path[:0] = [{path}]; {probe}"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "6"
    again = tmp_path / "again"
    again.mkdir()
    _, files_again = ship_python_path(given, again)
    assert [f.read_bytes() for f in files] == [f.read_bytes() for f in files_again]


def test_a_plan_entry_records_where_it_came_from() -> None:
    (item,) = ship_plan(["/dags/a/jobs"], KINDS.get)
    assert item == ShippedEntry(0, "/dags/a/jobs", "python_path_0_jobs.zip", "zip")


def test_relative_pod_templates_resolve_against_the_dag_folder() -> None:
    from airflow_provider_kafkaspark.core.spec.job_code import resolve_pod_templates

    given = spec([])
    given = JobSpec.from_dict(
        {
            **given.to_dict(),
            "spark_conf": {
                "spark.kubernetes.driver.podTemplateFile": "pods/driver.yaml",
                "spark.kubernetes.executor.podTemplateFile": "s3://bucket/executor.yaml",
            },
        }
    )
    resolved = resolve_pod_templates(given, "/dags/team")
    assert resolved.spark_conf["spark.kubernetes.driver.podTemplateFile"] == (
        "/dags/team/pods/driver.yaml"
    )
    assert resolved.spark_conf["spark.kubernetes.executor.podTemplateFile"] == (
        "s3://bucket/executor.yaml"
    )
    with pytest.raises(JobSpecError, match=r"spark_conf\.spark\.kubernetes\.driver"):
        resolve_pod_templates(given, None)
