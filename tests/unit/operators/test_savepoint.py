"""SavepointStreamingJobOperator: a savepoint of a running job, retention, the Asset event."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, cast

import pytest
from airflow.sdk import AssetAlias, Context
from airflow.sdk.exceptions import AirflowFailException
from airflow.sdk.execution_time.context import OutletEventAccessors

from airflow_provider_kafkaspark.core.control.folder import ControlFolder
from airflow_provider_kafkaspark.core.control.reports import WrittenBy
from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore
from airflow_provider_kafkaspark.errors import SavepointError
from airflow_provider_kafkaspark.operators.savepoint import SavepointStreamingJobOperator
from airflow_provider_kafkaspark.operators.stop import savepoint_asset
from tests.unit.core.state.test_running_copy import running_checkpoint


def operator(tmp_path: Path, **kwargs: Any) -> SavepointStreamingJobOperator:
    return SavepointStreamingJobOperator(
        task_id="savepoint",
        checkpoint=str(tmp_path / "checkpoint"),
        job_name="clicks",
        savepoint_root=str(tmp_path / "sp"),
        **kwargs,
    )


def run(op: SavepointStreamingJobOperator) -> tuple[dict[str, Any], OutletEventAccessors]:
    events = OutletEventAccessors()
    return op.execute(cast(Context, {"outlet_events": events})), events


def test_fields_and_outlets(tmp_path: Path) -> None:
    op = operator(tmp_path)
    assert set(op.template_fields) == {"checkpoint", "job_name", "savepoint_root"}
    assert op.outlets == [savepoint_asset("clicks")]
    templated = SavepointStreamingJobOperator(
        task_id="s", checkpoint="/cp", job_name="{{ params.job }}", savepoint_root="/sp"
    )
    assert templated.outlets == [AssetAlias("kafkaspark-savepoints")]


def test_a_bad_policy_fails_when_the_dag_is_parsed(tmp_path: Path) -> None:
    with pytest.raises(SavepointError, match="max_count"):
        operator(tmp_path, max_count=0)


def test_a_savepoint_of_the_running_job_then_retention(tmp_path: Path) -> None:
    checkpoint = running_checkpoint(tmp_path / "checkpoint", committed=2, planned=3)
    ControlFolder(str(checkpoint)).write_written_by(WrittenBy("4.0.1", 0))
    for day in (20, 21):
        backup = tmp_path / f"checkpoint.backup-202611{day}T000000000000Z"
        backup.mkdir()
        (backup / "metadata").write_text("{}")
    first, _ = run(operator(tmp_path))
    result, events = run(operator(tmp_path, max_count=1))
    assert result["savepoint"]["last_committed_batch"] == 2
    assert result["savepoint"]["of_running"] is True
    store = SavepointStore(str(tmp_path / "sp"))
    assert store.show(result["savepoint_id"]).spark_version == "4.0.1"
    assert result["retention"]["savepoints"]["disposed"] == [first["savepoint_id"]]
    assert result["retention"]["backups"]["disposed"] == [
        "checkpoint.backup-20261120T000000000000Z"
    ]
    assert [m.savepoint_id for m in store.list()] == [result["savepoint_id"]]
    assert events[savepoint_asset("clicks")].extra == {
        "savepoint_id": result["savepoint_id"],
        "savepoint_root": str(tmp_path / "sp"),
        "last_committed_batch": 2,
    }


def test_no_spark_version_when_the_checkpoint_does_not_say(tmp_path: Path) -> None:
    running_checkpoint(tmp_path / "checkpoint", committed=0, planned=0)
    result, _ = run(operator(tmp_path))
    assert SavepointStore(str(tmp_path / "sp")).show(result["savepoint_id"]).spark_version is None
    assert result["retention"] is None


def test_refused_before_the_first_committed_batch(tmp_path: Path) -> None:
    checkpoint = running_checkpoint(tmp_path / "checkpoint", committed=0, planned=0)
    shutil.rmtree(checkpoint / "commits")
    (checkpoint / "commits").mkdir()
    with pytest.raises(AirflowFailException, match="no committed batch yet"):
        run(operator(tmp_path))
    assert not (tmp_path / "sp").exists() or SavepointStore(str(tmp_path / "sp")).list() == []
