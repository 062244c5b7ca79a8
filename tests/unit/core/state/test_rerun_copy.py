"""The copy a compatibility check runs on: the last committed batch made to run again."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_kafkaspark.core.state.checkpoint import CheckpointReader
from airflow_provider_kafkaspark.core.state.rerun_copy import (
    copy_for_rerun,
    operators_change,
    stateful_operators,
    wanted_for_rerun,
)
from airflow_provider_kafkaspark.core.storage.location import open_location
from airflow_provider_kafkaspark.errors import CheckpointError
from tests.unit.core.state.test_running_copy import running_checkpoint


def test_the_copy_leaves_out_the_last_commit_and_the_state_it_wrote() -> None:
    assert wanted_for_rerun("offsets/2", 2)  # planned again from the same offsets
    assert not wanted_for_rerun("commits/2", 2)
    assert not wanted_for_rerun("commits/.2.crc", 2)
    assert wanted_for_rerun("commits/1", 2)
    assert not wanted_for_rerun("state/0/0/3.delta", 2)  # batch 2 wrote version 3
    assert not wanted_for_rerun("state/1/4/.3.delta.crc", 2)
    assert not wanted_for_rerun("state/0/0/3.snapshot", 2)
    assert wanted_for_rerun("state/0/0/2.delta", 2)  # what batch 2 loads
    assert wanted_for_rerun("state/0/_metadata/metadata", 2)
    assert not wanted_for_rerun("offsets/3", 2)
    assert not wanted_for_rerun("_kafkaspark/lease.json", 2)
    assert wanted_for_rerun("metadata", 2) and wanted_for_rerun("sources/0/0", 2)


def test_stateful_operators_are_read_from_their_state_files() -> None:
    rels = [
        "state/0/0/1.delta",
        "state/0/1/2.delta",
        "state/2/0/2.delta",
        "state/1/_metadata/metadata",  # metadata alone: no state of its own
        "state/3/0/.2.delta.crc",
        "offsets/2",
    ]
    assert stateful_operators(rels) == [0, 2, 3]
    assert stateful_operators(rels, version=2) == [0, 2, 3]
    assert stateful_operators(rels, version=1) == [0]
    assert stateful_operators([]) == []


def test_a_changed_operator_set_is_named_with_both_sides() -> None:
    assert operators_change([0, 1], [0, 1]) is None
    assert operators_change([], []) is None
    assert (
        operators_change([0, 1], [0]) == "changed number of stateful operators: old [0, 1], new [0]"
    )
    assert operators_change([], [0]) == "changed number of stateful operators: old [], new [0]"


def test_a_copy_of_a_running_query_plans_its_last_committed_batch_again(tmp_path: Path) -> None:
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=2, planned=3)
    target = open_location(str(tmp_path / "copy"))
    copy = copy_for_rerun(CheckpointReader(str(ckpt)), target)
    assert copy is not None
    assert (copy.batch, copy.old_operators) == (2, [0])
    position = CheckpointReader(target).position()
    assert (position.latest_planned, position.latest_committed) == (2, 1)
    assert position.pending_batch == 2
    assert sorted(p.name for p in (tmp_path / "copy/state/0/0").iterdir()) == [
        "1.delta",
        "2.delta",
    ]
    assert not (tmp_path / "copy/_kafkaspark").exists()
    # The source is only read.
    assert CheckpointReader(str(ckpt)).position().latest_planned == 3


def test_a_query_without_a_commit_has_no_batch_to_rerun(tmp_path: Path) -> None:
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=-1, planned=0)
    target = open_location(str(tmp_path / "copy"))
    assert copy_for_rerun(CheckpointReader(str(ckpt)), target) is None
    assert not (tmp_path / "copy").exists()


def test_the_copy_goes_only_where_nothing_is(tmp_path: Path) -> None:
    ckpt = running_checkpoint(tmp_path / "ckpt", committed=1, planned=1)
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy/offsets").write_text("x")
    with pytest.raises(CheckpointError, match="not empty"):
        copy_for_rerun(CheckpointReader(str(ckpt)), open_location(str(tmp_path / "copy")))
