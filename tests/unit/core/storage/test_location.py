"""fsspec locations: URLs, atomic writes, listings."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.core.state.savepoint import redact_url, validate_savepoint_id
from airflow_provider_kafkaspark.core.storage.location import open_location
from airflow_provider_kafkaspark.errors import SavepointError, StorageError


def test_local_path_and_file_url_are_the_same_place(tmp_path: Path) -> None:
    a = open_location(str(tmp_path))
    b = open_location(f"file://{tmp_path}")
    a.write_atomic("hello", "x", "y.txt")
    assert b.read_text("x", "y.txt") == "hello"
    assert a.listdir("x") == ["y.txt"]
    assert a.listdir("missing") == []
    assert [rel for rel, _ in a.walk_files()] == ["x/y.txt"]


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    loc = open_location(str(tmp_path))
    loc.write_atomic("one", "f.json")
    loc.write_atomic("two", "f.json")
    assert loc.read_text("f.json") == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_memory_filesystem_works_too() -> None:
    loc = open_location("memory://kafkaspark-test/cp")
    loc.write_atomic("{}", "metadata")
    assert loc.exists("metadata") and loc.read_text("metadata") == "{}"
    assert loc.checksum("metadata").startswith("sha256:")


@pytest.mark.parametrize("url", ["", "nosuchfs://bucket/x"])
def test_unusable_urls_are_named(url: str) -> None:
    with pytest.raises(StorageError) as err:
        open_location(url)
    assert (url or "non-empty") in str(err.value)


def test_missing_and_binary_files_are_storage_errors(tmp_path: Path) -> None:
    loc = open_location(str(tmp_path))
    with pytest.raises(StorageError, match="nope: file not found"):
        loc.read_text("nope")
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(StorageError, match="bin: not UTF-8"):
        loc.read_text("bin")


def test_credentials_never_reach_a_manifest_url() -> None:
    assert redact_url("s3://AKIA:s3cr3t@bucket/cp") == "s3://bucket/cp"
    assert redact_url("hdfs://user:pw@nn:8020/cp") == "hdfs://nn:8020/cp"
    assert redact_url("/local/cp") == "/local/cp"


@pytest.mark.parametrize("bad", ["", "..", "../x", "a/b", ".hidden", "a\\b", "x" * 200])
def test_savepoint_ids_cannot_escape(bad: str) -> None:
    with pytest.raises(SavepointError, match="bad savepoint id"):
        validate_savepoint_id(bad)


def test_map_files_keeps_order_and_the_storage_scope_on_a_store() -> None:
    """On a store (here fsspec's memory one) the calls run in threads: results come back in
    the items' order, each call sees the caller's storage scope, and an error is raised."""
    import threading

    from airflow_provider_kafkaspark.core.storage.location import _S3_OPTIONS, s3_options_scope

    store = open_location("memory://map-files")
    assert not store.on_local_disk
    threads: set[str] = set()

    def probe(i: int) -> tuple[int, object]:
        threads.add(threading.current_thread().name)
        return i * i, _S3_OPTIONS.get()

    with s3_options_scope({"key": "k"}):
        results = store.map_files(probe, range(40))
    assert [r[0] for r in results] == [i * i for i in range(40)]
    assert all(r[1] == {"key": "k"} for r in results)
    assert threading.current_thread().name not in threads

    def fail(i: int) -> int:
        if i == 7:
            raise ValueError("seven")
        return i

    with pytest.raises(ValueError, match="seven"):
        store.map_files(fail, range(10))


def test_map_files_on_local_disk_runs_in_the_caller(tmp_path: Path) -> None:
    import threading

    here = threading.current_thread().name
    names = open_location(str(tmp_path)).map_files(
        lambda _: threading.current_thread().name, range(5)
    )
    assert names == [here] * 5


def test_a_folder_of_empty_folders_has_no_files(tmp_path: Path) -> None:
    # A checkpoint location emptied by a move aside may keep its folders (an object store
    # lists them for a while): it is empty for a restore and no checkpoint for a submit.
    (tmp_path / "cp" / "offsets").mkdir(parents=True)
    (tmp_path / "cp" / "_kafkaspark").mkdir()
    location = open_location(str(tmp_path / "cp"))
    assert location.isdir("offsets") and not location.has_files()
    assert not CheckpointReader(location.url).exists()
    (tmp_path / "cp" / "offsets" / "0").write_text("v1\n")
    assert location.has_files() and location.has_files("offsets")
    assert not location.has_files("_kafkaspark")
    assert CheckpointReader(location.url).exists()
