"""Compare-and-set of one file: the lease's step from what is there, and the local-disk and
read-back implementations (the S3 one runs against a real server in
tests/integration/test_lease_race.py)."""

from __future__ import annotations

from pathlib import Path

import fsspec
import pytest

from airflow_provider_kafkaspark.core.control.lease import Lease, lease_step
from airflow_provider_kafkaspark.core.storage.conditional_files import (
    COMPARE_AND_SET,
    READ_BACK,
    LocalConditionalFiles,
    ReadBackFiles,
    conditional_files,
)
from airflow_provider_kafkaspark.core.storage.location import open_location

T0 = 1_700_000_000_000


def held_by(owner: str, heartbeat: int = T0) -> Lease:
    return Lease(owner, "job", "host", 1, heartbeat - 1_000, heartbeat, 30_000)


def test_the_lease_step_follows_what_is_there() -> None:
    assert lease_step(None, "me", at_ms=T0) == "create"
    assert lease_step(held_by("me"), "me", at_ms=T0) == "replace"
    assert lease_step(held_by("other"), "me", at_ms=T0) == "refuse"
    assert lease_step(held_by("other"), "me", at_ms=T0, force=True) == "replace"
    assert lease_step(held_by("other", T0 - 31_000), "me", at_ms=T0) == "replace"  # expired


def test_local_disk_creates_once_and_replaces_only_an_unchanged_file(tmp_path: Path) -> None:
    files = LocalConditionalFiles()
    path = str(tmp_path / "control" / "lease.json")
    assert files.read(path) is None
    assert files.create(path, b"one")
    assert not files.create(path, b"two")
    first = files.read(path)
    assert first is not None and first.data == b"one"
    assert files.replace(path, b"three", first.version)
    assert not files.replace(path, b"four", first.version)  # changed since
    current = files.read(path)
    assert current is not None and current.data == b"three"
    assert not files.delete(path, first.version)
    assert files.delete(path, current.version) and files.read(path) is None
    assert not files.replace(path, b"five", current.version)  # gone


def test_read_back_on_a_store_without_preconditions() -> None:
    fs = fsspec.filesystem("memory")
    files = ReadBackFiles(fs)
    path = "/unit-read-back/lease.json"
    assert files.create(path, b"one") and not files.create(path, b"two")
    first = files.read(path)
    assert first is not None
    assert files.replace(path, b"three", first.version)
    assert not files.replace(path, b"four", first.version)
    fs.rm(path)


@pytest.mark.parametrize(
    ("url", "guarantee"), [("/tmp/x", COMPARE_AND_SET), ("memory://x", READ_BACK)]
)
def test_each_storage_gets_its_way(url: str, guarantee: str) -> None:
    assert conditional_files(open_location(url)).guarantee == guarantee


def test_an_object_s_age_is_the_store_s_date_minus_its_last_modified() -> None:
    from datetime import UTC, datetime

    from airflow_provider_kafkaspark.core.storage.conditional_files import store_age_ms

    head = {
        "LastModified": datetime(2026, 11, 27, 8, 24, 30, tzinfo=UTC),
        "ResponseMetadata": {"HTTPHeaders": {"date": "Fri, 27 Nov 2026 08:24:41 GMT"}},
    }
    assert store_age_ms(head) == 11_000
    assert store_age_ms({"LastModified": head["LastModified"]}) is None
    bad = {**head, "ResponseMetadata": {"HTTPHeaders": {"date": "yesterday"}}}
    assert store_age_ms(bad) is None
