"""A job's datasets as OpenLineage names them: Kafka topics under their cluster's first
bootstrap server, paths by store."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec
from airflow_provider_kafkaspark.core.spec.lineage import (
    DatasetName,
    backfill_datasets,
    job_datasets,
    kafka_namespace,
    path_dataset,
    pattern_topics,
)
from airflow_provider_kafkaspark.errors import InvalidArgumentError


def spec(source: dict[str, Any], sink: dict[str, Any]) -> JobSpec:
    return JobSpec.from_dict(
        {
            "job_name": "j",
            "source": {"bootstrap_servers": "b1:9092,b2:9092", **source},
            "sink": sink,
            "checkpoint_location": "/tmp/cp",
        }
    )


@pytest.mark.parametrize(
    ("servers", "namespace"),
    [
        ("b1:9092,b2:9093", "kafka://b1:9092"),
        (" b1:9094 , b2:9092", "kafka://b1:9094"),
        ("broker", "kafka://broker:9092"),
        ("SASL_SSL://b1:9093,b2:9093", "kafka://b1:9093"),
        ("[::1]:19092", "kafka://[::1]:19092"),
        ("[::1]", "kafka://[::1]:9092"),
    ],
)
def test_the_kafka_namespace_is_the_first_bootstrap_server(servers: str, namespace: str) -> None:
    assert kafka_namespace(servers) == namespace


def test_no_bootstrap_server_names_no_namespace() -> None:
    with pytest.raises(InvalidArgumentError, match="no bootstrap server"):
        kafka_namespace(" , ")


@pytest.mark.parametrize(
    ("path", "dataset"),
    [
        ("s3://bucket/jobs/out/", DatasetName("s3://bucket", "jobs/out")),
        ("s3a://bucket/jobs/out", DatasetName("s3://bucket", "jobs/out")),
        ("s3://bucket", DatasetName("s3://bucket", "/")),
        ("gs://b/x", DatasetName("gs://b", "x")),
        ("hdfs://nn:8020/warehouse/out", DatasetName("hdfs://nn:8020", "/warehouse/out")),
        ("/tmp/out/", DatasetName("file", "/tmp/out")),
        ("file:///tmp/a/../out", DatasetName("file", "/tmp/out")),
        (
            "abfss://c@acct.dfs.core.windows.net/p",
            DatasetName("abfss://c@acct.dfs.core.windows.net", "/p"),
        ),
    ],
)
def test_paths_are_named_by_their_store(path: str, dataset: DatasetName) -> None:
    assert path_dataset(path) == dataset


def test_a_relative_local_path_is_named_absolute() -> None:
    found = path_dataset("out/x")
    assert (
        found.namespace == "file" and found.name.startswith("/") and found.name.endswith("/out/x")
    )


def test_a_kafka_job_reads_its_topics_and_writes_its_sink_topic() -> None:
    found = job_datasets(
        spec({"subscribe": ["b", "a"]}, {"kind": "kafka_exactly_once", "topic": "out"})
    )
    assert found.inputs == (
        DatasetName("kafka://b1:9092", "a"),
        DatasetName("kafka://b1:9092", "b"),
    )
    assert found.outputs == (DatasetName("kafka://b1:9092", "out"),)
    assert found.pattern is None


def test_a_sink_on_other_servers_is_named_by_them() -> None:
    found = job_datasets(
        spec({"subscribe": ["a"]}, {"kind": "kafka", "topic": "out", "bootstrap_servers": "c:1"})
    )
    assert found.outputs == (DatasetName("kafka://c:1", "out"),)


def test_assigned_partitions_name_their_topics_once() -> None:
    found = job_datasets(spec({"assign": {"t": [0, 2], "u": [1]}}, {"kind": "console"}))
    assert [d.name for d in found.inputs] == ["t", "u"]
    assert found.outputs == ()  # the console is no dataset


def test_a_parquet_sink_writes_its_path() -> None:
    found = job_datasets(spec({"subscribe": ["a"]}, {"kind": "parquet", "path": "s3a://b/out"}))
    assert found.outputs == (DatasetName("s3://b", "out"),)


def test_a_pattern_names_no_topic_until_the_cluster_lists_them() -> None:
    given = spec({"subscribe_pattern": "events\\.(eu|us)"}, {"kind": "kafka", "topic": "out"})
    assert job_datasets(given).inputs == ()
    assert job_datasets(given).pattern == "events\\.(eu|us)"
    listed = ["events.eu", "events.us", "events.eu.dlq", "other", "__consumer_offsets"]
    assert [d.name for d in job_datasets(given, listed_topics=listed).inputs] == [
        "events.eu",
        "events.us",
    ]


def test_a_pattern_matches_whole_names_and_never_internal_topics() -> None:
    assert pattern_topics("ev.*", ["ev1", "xev1", "__ev"]) == ["ev1"]
    assert pattern_topics(".*", ["__consumer_offsets", "a"]) == ["a"]
    assert pattern_topics("(", ["a"]) == []  # not a Python pattern: matches none


def test_a_backfill_writes_its_interval_folder() -> None:
    given = spec({"subscribe": ["a"]}, {"kind": "kafka", "topic": "out"})
    found = backfill_datasets(given, "/data/bf/interval=1-2")
    assert found.inputs == (DatasetName("kafka://b1:9092", "a"),)
    assert found.outputs == (DatasetName("file", "/data/bf/interval=1-2"),)
