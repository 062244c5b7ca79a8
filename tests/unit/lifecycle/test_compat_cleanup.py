"""The removal of a compatibility check's copy (issue 44, item 3): only the check's own
`.compat-` location, once its driver is gone; a driver not known to be gone is not waited for
without end, and what it writes after the removal is looked for and removed; removal errors
are logged naming the URL and never change the verdict; on an object store that keeps emptied
folders (SeaweedFS) the folders go too. The real stack: tests/integration/test_compat_check.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from fsspec.implementations.local import LocalFileSystem

from airflow_provider_kafkaspark.core.cluster.job_ref import JobRef
from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.storage import tree_removal
from airflow_provider_kafkaspark.core.storage.location import Location

# The module, not its names: each test then fails on its own where a name is missing.
from airflow_provider_kafkaspark.lifecycle import compat_check
from airflow_provider_kafkaspark.lifecycle.compat_check import check_compatibility
from airflow_provider_kafkaspark.lifecycle.errors import CompatCheckError
from tests.unit.core.state.test_running_copy import running_checkpoint
from tests.unit.lifecycle.test_compat_check import (
    PlayedDriver,
    leftovers,
    options,
    rerun,
    spec,
)


def test_only_a_compat_location_beside_the_checkpoint_may_hold_the_copy() -> None:
    refusal = compat_check.scratch_refusal
    ckpt = "s3://b/clicks/ckpt"
    assert refusal(ckpt, "s3://b/clicks/ckpt.compat-20231114T221320123Z") is None
    assert refusal(ckpt, "s3://b/clicks/ckpt.compat-x/") is None
    assert refusal(ckpt, "s3://elsewhere/tmp/clicks.compat-1") is None
    for name in (
        "s3://b/clicks",
        "s3://b/clicks/mine",
        "s3://b/clicks/.compat-1",
        "s3://b/x.compat-",
    ):
        why = refusal(ckpt, name)
        assert why is not None and "must be named" in why, name
    # Named like a copy, but in the checkpoint, holding it, or the checkpoint itself.
    for checkpoint, name in (
        (ckpt, "s3://b/clicks/ckpt/state.compat-1"),
        ("s3://b/clicks.compat-1/ckpt", "s3://b/clicks.compat-1"),
        ("/j/ckpt.compat-1", "/j/ckpt.compat-1/"),
    ):
        why = refusal(checkpoint, name)
        assert why is not None and "neither the checkpoint" in why, name


def test_a_look_for_late_writes_waits_only_for_a_driver_not_known_to_be_gone() -> None:
    settle = compat_check.settle_polls
    assert settle(True) == 0
    assert settle(False) == settle(None) == compat_check.SETTLE_POLLS > 0


def test_the_folders_of_a_copy_go_deepest_first_and_none_outside_it() -> None:
    root = "job/ckpt.compat-1/"
    keys = [
        "job/ckpt.compat-1/state/0/0/2.delta",
        "job/ckpt.compat-1/offsets/3",
        "job/ckpt.compat-1/commits/",  # an S3A folder marker
        "job/ckpt/offsets/3",  # the checkpoint's: never
    ]
    folders = ["job/ckpt.compat-1/_kafkaspark/", "job/other/"]
    assert tree_removal.folders_to_remove(root, keys, folders) == [
        "job/ckpt.compat-1/state/0/0/",
        "job/ckpt.compat-1/state/0/",
        "job/ckpt.compat-1/_kafkaspark/",
        "job/ckpt.compat-1/commits/",
        "job/ckpt.compat-1/offsets/",
        "job/ckpt.compat-1/state/",
        "job/ckpt.compat-1/",
    ]
    assert tree_removal.folders_to_remove(root, [], []) == [root]


def test_a_location_not_named_as_a_copy_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=2, planned=2)
    backend = PlayedDriver(rerun([0]))
    (tmp_path / "shared").mkdir()
    with pytest.raises(CompatCheckError, match="must be named"):
        check_compatibility(
            backend, spec(str(ckpt)), options(tmp_path), scratch=str(tmp_path / "shared")
        )
    with pytest.raises(CompatCheckError, match="neither the checkpoint"):
        check_compatibility(
            backend, spec(str(ckpt)), options(tmp_path), scratch=str(ckpt / "x.compat-1")
        )
    assert backend.submitted == [] and (tmp_path / "shared").is_dir()
    assert (ckpt / "commits/2").exists()


class ShuttingDown(PlayedDriver):
    """A check's driver whose report is written at once and whose backend answers `alive`
    from `answers` (the last one repeated); an exception is raised, not answered."""

    def __init__(self, act: Callable[[JobSpec], None], answers: Iterable[object]) -> None:
        super().__init__(act)
        self.answers = list(answers)
        self.asked = 0

    def alive(self, ref: JobRef) -> bool | None:
        answer = self.answers[min(self.asked, len(self.answers) - 1)]
        self.asked += 1
        if isinstance(answer, BaseException):
            raise answer
        assert answer is None or isinstance(answer, bool)
        return answer


def late_write_after_removal(monkeypatch: pytest.MonkeyPatch, copies: list[Path]) -> None:
    """The check's driver writes into its copy once, right after the copy was first removed
    (the lease, progress or a log Spark writes as it shuts down)."""
    remove = LocalFileSystem.rm

    def rm(self: LocalFileSystem, path: Any, *args: Any, **kwargs: Any) -> Any:
        done = remove(self, path, *args, **kwargs)
        if ".compat-" in str(path) and not copies:
            late = Path(str(path)) / "_kafkaspark/progress.json"
            late.parent.mkdir(parents=True)
            late.write_text("{}")
            copies.append(late)
        return done

    monkeypatch.setattr(LocalFileSystem, "rm", rm)


@pytest.mark.parametrize("answers", [[True, True, False], [None]], ids=["gone-later", "unknown"])
def test_what_the_driver_writes_after_the_removal_is_removed_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: list[object]
) -> None:
    monkeypatch.setattr(compat_check, "POLL_S", 0.01)
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=2, planned=3)
    late: list[Path] = []
    late_write_after_removal(monkeypatch, late)
    backend = ShuttingDown(rerun([0]), answers)
    result = check_compatibility(backend, spec(str(ckpt)), options(tmp_path))
    assert result.compatible and result.batch == 2
    assert late and not late[0].exists()  # written after the removal, then removed
    assert leftovers(tmp_path) == []
    assert backend.asked == len(answers)  # asked until gone, or once when it cannot tell
    assert (ckpt / "commits/2").exists()


def test_a_driver_that_does_not_go_is_waited_for_a_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(compat_check, "POLL_S", 0.01)
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=2, planned=3)
    late: list[Path] = []
    late_write_after_removal(monkeypatch, late)
    backend = ShuttingDown(rerun([0]), [True])
    with caplog.at_level(logging.WARNING, logger=compat_check.__name__):
        result = check_compatibility(backend, spec(str(ckpt)), options(tmp_path))
    assert result.compatible
    assert late and leftovers(tmp_path) == []
    assert 1 < backend.asked <= compat_check.GONE_POLLS  # bounded in count (and in time)
    assert any(
        "still running" in r.getMessage() and ".compat-" in r.getMessage() for r in caplog.records
    )


def test_a_backend_that_cannot_answer_leaves_the_verdict_and_the_removal_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compat_check, "POLL_S", 0.01)
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=2, planned=2)
    message = "StreamingQueryException: [STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key"
    backend = ShuttingDown(rerun([], 4, message), [ConnectionError("RM unreachable")])
    result = check_compatibility(backend, spec(str(ckpt)), options(tmp_path))
    assert not result.compatible and result.reason == message
    assert 1 < backend.asked <= compat_check.GONE_POLLS
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("failures", [1, 99], ids=["once", "always"])
def test_removal_errors_are_logged_with_the_url_and_never_change_the_verdict(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failures: int,
) -> None:
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=2, planned=3)
    remove = LocalFileSystem.rm
    calls: list[str] = []

    def rm(self: LocalFileSystem, path: Any, *args: Any, **kwargs: Any) -> Any:
        if ".compat-" in str(path):
            calls.append(str(path))
            if len(calls) <= failures:
                raise RuntimeError("the store answered nonsense")
        return remove(self, path, *args, **kwargs)

    monkeypatch.setattr(LocalFileSystem, "rm", rm)
    with caplog.at_level(logging.WARNING, logger=compat_check.__name__):
        result = check_compatibility(PlayedDriver(rerun([0])), spec(str(ckpt)), options(tmp_path))
    assert result.compatible and result.batch == 2
    copy = calls[0]
    assert ".compat-" in Path(copy).name
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("could not remove" in w and copy in w and "nonsense" in w for w in warned)
    if failures == 1:
        assert leftovers(tmp_path) == [] and len(calls) == 2
    else:
        assert leftovers(tmp_path) == [Path(copy).name] and len(calls) == 2
        assert any("still holds" in w and copy in w for w in warned)


class FolderKeepingStore:
    """An S3 store as SeaweedFS behaves: a folder exists apart from the objects in it, stays
    listed once emptied, and goes when its key `a/b/` is deleted while it is empty. Keys in
    `refuse` are refused (a per-key error in DeleteObjects' answer) that many times;
    `empty_folders` (`a/b/`) never held an object (Hadoop's S3A makes such folders)."""

    protocol = ("s3", "s3a")

    def __init__(
        self,
        keys: Iterable[str],
        refuse: dict[str, int] | None = None,
        empty_folders: Iterable[str] = (),
    ) -> None:
        self.objects = set(keys)
        self.folders = {
            "/".join(entry.split("/")[:depth]) + "/"
            for entry in (*self.objects, *empty_folders)
            for depth in range(1, entry.count("/") + 1)
        }
        self.refuse = dict(refuse or {})
        self.deleted: list[list[str]] = []

    def call_s3(self, method: str, **kwargs: Any) -> dict[str, Any]:
        assert kwargs.pop("Bucket") == "bkt"
        if method == "list_objects_v2":
            return self._list(kwargs["Prefix"], kwargs.get("Delimiter", ""))
        assert method == "delete_objects"
        keys = [item["Key"] for item in kwargs["Delete"]["Objects"]]
        self.deleted.append(keys)
        errors = []
        for key in keys:
            if self.refuse.get(key, 0) > 0:
                self.refuse[key] -= 1
                errors.append({"Key": key, "Code": "InternalError", "Message": "try again"})
            elif key.endswith("/"):
                if not any(e != key and e.startswith(key) for e in self.objects | self.folders):
                    self.folders.discard(key)
            else:
                self.objects.discard(key)
        return {"Errors": errors} if errors else {}

    def _list(self, prefix: str, delimiter: str) -> dict[str, Any]:
        contents: set[str] = set()
        below: set[str] = set()
        for entry in self.objects | (self.folders if delimiter else set()):
            if not entry.startswith(prefix) or entry == prefix:
                continue
            rest = entry[len(prefix) :]
            if delimiter and "/" in rest:
                below.add(prefix + rest.split("/", 1)[0] + "/")
            elif entry in self.objects:
                contents.add(entry)
        return {
            "Contents": [{"Key": key} for key in sorted(contents)],
            "CommonPrefixes": [{"Prefix": folder} for folder in sorted(below)],
            "IsTruncated": False,
        }


COPY = [
    "job/ckpt.compat-1/metadata",
    "job/ckpt.compat-1/offsets/2",
    "job/ckpt.compat-1/commits/1",
    "job/ckpt.compat-1/state/0/0/2.delta",
    "job/ckpt.compat-1/state/0/1/2.delta",
    "job/ckpt.compat-1/_kafkaspark/stopped.json",
]
RUNNING = ["job/ckpt/offsets/2", "job/ckpt/state/0/0/2.delta", "job/ckpt.compat-10/offsets/1"]


def store_copy(store: FolderKeepingStore) -> Location:
    return Location(store, "bkt/job/ckpt.compat-1", "s3://bkt/job/ckpt.compat-1")


def test_on_a_store_that_keeps_folders_the_copys_folders_go_too() -> None:
    store = FolderKeepingStore([*COPY, *RUNNING])
    compat_check._clean_up(PlayedDriver(rerun([0])), None, store_copy(store), "s3://bkt/job/ckpt")
    assert store.objects == set(RUNNING)
    assert not [f for f in store.folders if f.startswith("job/ckpt.compat-1/")]
    assert "job/ckpt/state/0/0/" in store.folders and "job/ckpt.compat-10/" in store.folders
    # The objects first, then the folders, one request per depth, the deepest first.
    assert sorted(store.deleted[0]) == sorted(COPY)
    depths = [{key.count("/") for key in request} for request in store.deleted[1:]]
    assert depths == [{5}, {4}, {3}, {2}]
    everything = [key for request in store.deleted for key in request]
    assert all(key.startswith("job/ckpt.compat-1/") for key in everything)


@pytest.mark.parametrize("times", [1, 2], ids=["once", "twice"])
def test_a_key_the_store_refuses_is_logged_with_its_url(
    caplog: pytest.LogCaptureFixture, times: int
) -> None:
    refused = "job/ckpt.compat-1/state/0/1/2.delta"
    store = FolderKeepingStore([*COPY, *RUNNING], refuse={refused: times})
    with caplog.at_level(logging.WARNING, logger=compat_check.__name__):
        compat_check._clean_up(
            PlayedDriver(rerun([0])), None, store_copy(store), "s3://bkt/job/ckpt"
        )
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    url = "s3://bkt/job/ckpt.compat-1/state/0/1/2.delta"
    assert any(url in w and "InternalError" in w for w in warned)
    if times == 1:  # removed by the second removal
        assert store.objects == set(RUNNING) and not any("still holds" in w for w in warned)
    else:
        assert store.objects == {*RUNNING, refused}
        assert any("s3://bkt/job/ckpt.compat-1 still holds" in w for w in warned)


def test_a_kept_folder_that_never_held_an_object_is_found_and_removed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FolderKeepingStore([*COPY, *RUNNING], empty_folders=["job/ckpt.compat-1/sources/0/"])
    with caplog.at_level(logging.INFO, logger=compat_check.__name__):
        compat_check._clean_up(
            PlayedDriver(rerun([0])), None, store_copy(store), "s3://bkt/job/ckpt"
        )
    assert store.objects == set(RUNNING)
    assert not [f for f in store.folders if f.startswith("job/ckpt.compat-1/")]
    said = [r.getMessage() for r in caplog.records]
    assert any("listed after its removal (first: ., sources/)" in m for m in said), said
    assert not any(r.levelno >= logging.WARNING for r in caplog.records)
