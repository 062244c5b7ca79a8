"""The upload-once logic against fsspec's in-memory filesystem (a stand-in for S3: a scheme
that is not the local disk)."""

from __future__ import annotations

import uuid
from pathlib import Path

import fsspec
import pytest

from airflow_provider_kafkaspark.backends.staged_jars import (
    file_digest,
    pyspark_archives,
    stage_jars,
)
from airflow_provider_kafkaspark.errors import InvalidInputError


@pytest.fixture
def staging() -> str:
    return f"memory://bucket-{uuid.uuid4().hex[:8]}/staging"


def _jar(folder: Path, name: str, content: bytes) -> Path:
    path = folder / name
    path.write_bytes(content)
    return path


def test_a_jar_is_uploaded_by_the_first_submit_and_named_by_the_next(
    tmp_path: Path, staging: str
) -> None:
    big = _jar(tmp_path, "bundle.jar", b"x" * 10_000)
    first = stage_jars(f"{big},local:/opt/jars/k.jar", staging)
    assert [j.path for j in first.uploaded] == [str(big)] and first.reused == ()
    url = first.uploaded[0].url
    assert first.jars == f"{url},local:/opt/jars/k.jar"
    assert url.startswith(f"{staging}/kafkaspark-jars/{file_digest(big)[:16]}/")
    fs = fsspec.filesystem("memory")
    assert fs.cat_file(url) == big.read_bytes()
    modified = fs.info(url)["created"]

    again = stage_jars(f"{big},local:/opt/jars/k.jar", staging)
    assert again.uploaded == () and [j.url for j in again.reused] == [url]
    assert again.jars == first.jars
    # The copy YARN localizes is never rewritten (it checks the file's time).
    assert fs.info(url)["created"] == modified


def test_a_new_version_of_a_jar_is_a_new_copy(tmp_path: Path, staging: str) -> None:
    jar = _jar(tmp_path, "job.jar", b"one")
    first = stage_jars(str(jar), staging)
    jar.write_bytes(b"two")
    second = stage_jars(str(jar), staging)
    assert len(second.uploaded) == 1 and second.jars != first.jars
    assert fsspec.filesystem("memory").cat_file(first.uploaded[0].url) == b"one"


def test_a_copy_of_another_size_is_written_again(tmp_path: Path, staging: str) -> None:
    jar = _jar(tmp_path, "job.jar", b"complete content")
    url = stage_jars(str(jar), staging).uploaded[0].url
    fsspec.filesystem("memory").pipe_file(url, b"cut")
    again = stage_jars(str(jar), staging)
    assert [j.url for j in again.uploaded] == [url]
    assert fsspec.filesystem("memory").cat_file(url) == b"complete content"


def test_jars_are_left_to_spark_without_a_shared_staging_folder(tmp_path: Path) -> None:
    jar = str(_jar(tmp_path, "job.jar", b"j"))
    for staging in (None, f"file://{tmp_path}/staging", str(tmp_path / "staging")):
        staged = stage_jars(jar, staging)
        assert staged.jars == jar and staged.uploaded == () and staged.reused == ()
    # Nor is anything staged when every jar is already on the nodes or the cluster.
    remote = "local:/opt/k.jar,s3a://b/k2.jar"
    assert stage_jars(remote, "memory://b/staging").jars == remote


def test_a_missing_jar_is_named(tmp_path: Path, staging: str) -> None:
    missing = tmp_path / "nope.jar"
    with pytest.raises(InvalidInputError, match=r"nope\.jar: no such file"):
        stage_jars(str(missing), staging)


def test_pysparks_archives_are_found_where_spark_submit_finds_them() -> None:
    archives = pyspark_archives()
    assert archives is not None
    first, *rest = archives.split(",")
    assert first.endswith("/python/lib/pyspark.zip") and Path(first).is_file()
    assert [Path(p).name.startswith("py4j-") for p in rest] == [True]


def test_a_store_that_refuses_this_host_leaves_the_jars_to_spark_submit(
    tmp_path: Path, staging: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_kafkaspark.backends import staged_jars
    from airflow_provider_kafkaspark.errors import StorageAccessError

    def refused(url: str) -> None:
        raise StorageAccessError(f"{url}: the store refused access")

    monkeypatch.setattr(staged_jars, "open_location", refused)
    jar = str(_jar(tmp_path, "job.jar", b"j"))
    staged = stage_jars(jar, staging)
    assert staged.jars == jar and not staged.staged
