"""The operators' OpenLineage facets: the provider's Dataset and OperatorLineage, named from
the spec on the Kafka connection's servers (no broker is reached)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from airflow_provider_kafkaspark.operators.backfill import KafkaBackfillOperator
from airflow_provider_kafkaspark.operators.deploy import DeployStreamingJobOperator
from airflow_provider_kafkaspark.operators.submit import SubmitStreamingJobOperator
from tests.unit.airflow_helpers import kafka_connection


def job_spec(**sink: Any) -> dict[str, Any]:
    return {
        "job_name": "j",
        "source": {"bootstrap_servers": "from-connection:9092", "subscribe": ["in_a", "in_b"]},
        "sink": sink or {"kind": "kafka_exactly_once", "topic": "out"},
        "checkpoint_location": "/tmp/cp",
    }


def names(datasets: list[Any]) -> list[tuple[str, str]]:
    return [(d.namespace, d.name) for d in datasets]


@pytest.fixture
def kafka_conn(monkeypatch: pytest.MonkeyPatch) -> str:
    return kafka_connection(
        monkeypatch, "kafka_ol", {"bootstrap.servers": "k1:29092,k2:29092", "sasl.password": "x"}
    )


def test_a_submit_reads_its_topics_and_writes_its_sink_topic_on_the_connections_cluster(
    kafka_conn: str,
) -> None:
    op = SubmitStreamingJobOperator(task_id="s", job_spec=job_spec(), kafka_conn_id=kafka_conn)
    lineage = op.get_openlineage_facets_on_start()
    assert names(lineage.inputs) == [("kafka://k1:29092", "in_a"), ("kafka://k1:29092", "in_b")]
    assert names(lineage.outputs) == [("kafka://k1:29092", "out")]
    # Without a run (nothing submitted), the complete event names the same and lists nothing.
    done = op.get_openlineage_facets_on_complete(cast(Any, None))
    assert names(done.inputs) == names(lineage.inputs)


def test_a_deploy_of_a_parquet_job_writes_its_s3_path(kafka_conn: str) -> None:
    spec = job_spec(kind="parquet", path="s3a://lake/ip_count/")
    op = DeployStreamingJobOperator(
        task_id="d", job_spec=spec, kafka_conn_id=kafka_conn, savepoint_root="/sp"
    )
    assert names(op.get_openlineage_facets_on_start().outputs) == [("s3://lake", "ip_count")]


def test_a_backfill_writes_its_output_root_then_its_interval(kafka_conn: str) -> None:
    op = KafkaBackfillOperator(
        task_id="b", job_spec=job_spec(), output_root="/data/bf", kafka_conn_id=kafka_conn
    )
    assert names(op.get_openlineage_facets_on_start().outputs) == [("file", "/data/bf")]
    op._written = "/data/bf/interval=1-2"  # what a run sets
    done = op.get_openlineage_facets_on_complete(cast(Any, None))
    assert names(done.outputs) == [("file", "/data/bf/interval=1-2")]
    assert names(done.inputs) == [("kafka://k1:29092", "in_a"), ("kafka://k1:29092", "in_b")]
