"""Pure helpers of lifecycle.py."""

from __future__ import annotations

from airflow_provider_kafkaspark.lifecycle import live_first


def test_live_first_moves_dead_entries_last_and_keeps_the_rest_in_order() -> None:
    servers = "a:9092, b:9092,c:9092,d:9092"
    assert live_first(servers, ["a:9092", "c:9092"]) == "b:9092,d:9092,a:9092,c:9092"


def test_live_first_without_dead_entries_only_normalises_spacing() -> None:
    assert live_first("a:1, b:2", []) == "a:1,b:2"
