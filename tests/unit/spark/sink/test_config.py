"""What the driver hands the tasks (`spark/sink/config.py`): the marker's meaning."""

from __future__ import annotations

import pytest

from airflow_provider_kafkaspark.spark.sink.config import already_committed


@pytest.mark.parametrize(
    ("marker", "batch", "committed"),
    [(-1001, 0, False), (0, 0, False), (1, 0, True), (5, 4, True), (5, 5, False), (9, 5, True)],
)
def test_marker_offset_is_batch_plus_one(marker: int, batch: int, committed: bool) -> None:
    assert already_committed(marker, batch) is committed
